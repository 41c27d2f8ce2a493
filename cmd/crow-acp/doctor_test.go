package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
)

// TestDoctorRejectedKey: an endpoint answering 401 fails the endpoint
// check with a fix naming the key's variable, and the key is not printed.
func TestDoctorRejectedKey(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	env := fixture.NewEnv(t)
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-wrong-0123456789",
		"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	var out bytes.Buffer
	code := run(context.Background(), []string{"doctor"}, stdio{in: strings.NewReader(""), out: &out, err: &out}, func(k string) string { return vars[k] })
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if gotAuth != "Bearer sk-wrong-0123456789" {
		t.Errorf("Authorization sent: %q", gotAuth)
	}
	s := out.String()
	for _, want := range []string{"FAIL  endpoint", "rejected the API key (HTTP 401)", "fix: run crow-acp login, or export OPENAI_API_KEY", "skip  model"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "sk-wrong") {
		t.Errorf("the key was printed:\n%s", s)
	}
}

// TestDoctorNeutralisesEndpointText: model names an endpoint lists are
// printed with their escape sequences visible.
func TestDoctorNeutralisesEndpointText(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"evil\u001b]0;pwned\u0007\u001b[2J","object":"model"}]}`))
	}))
	defer srv.Close()
	env := fixture.NewEnv(t)
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-test-0123456789",
		"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp, "CROW_MODEL": "m"}
	var out bytes.Buffer
	run(context.Background(), []string{"doctor"}, stdio{in: strings.NewReader(""), out: &out, err: &out}, func(k string) string { return vars[k] })
	if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), "evil^[]0;pwned^G^[[2J") {
		t.Errorf("doctor output:\n%q", out.String())
	}
}
