package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
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
	code, s := both(commandLines(vars)("doctor"))
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if gotAuth != "Bearer sk-wrong-0123456789" {
		t.Errorf("Authorization sent: %q", gotAuth)
	}
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
	_, out := both(commandLines(vars)("doctor"))
	if strings.Contains(out, "\x1b") || !strings.Contains(out, "evil^[]0;pwned^G^[[2J") {
		t.Errorf("doctor output:\n%q", out)
	}
}

// TestDoctorDiscoversTheWindow: with no window configured, doctor asks the
// endpoint (here vLLM's GET /v1/models max_model_len) and says where the
// window came from; a server that tells nothing is a warning with a fix.
func TestDoctorDiscoversTheWindow(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	m.SetDiscovery(fakemodel.Discovery{Flavor: "vllm", Model: "Qwen/Qwen3-8B", Window: 32768})
	dir := t.TempDir()
	env := map[string]string{"HOME": dir, "OPENAI_BASE_URL": m.URL(), "CROW_MODEL": "Qwen/Qwen3-8B", "CROW_CONFIG": "", "XDG_CONFIG_HOME": dir}
	doctor := commandLines(env)
	if _, out, errOut := doctor("doctor"); !strings.Contains(out, "ok    window     32768 tokens for Qwen/Qwen3-8B (discovered: GET /models (max_model_len))") {
		t.Fatalf("doctor output:\n%s%s", out, errOut)
	}
	m.SetDiscovery(fakemodel.Discovery{})
	env["CROW_MODEL"] = fakemodel.ModelID
	if _, out, _ := doctor("doctor"); !strings.Contains(out, "warn  window     no context window configured for fake-model and the endpoint does not tell it") {
		t.Fatalf("doctor output:\n%s", out)
	}
}

// TestDoctorFixedPrefixOverWindow: llama.cpp started with -c 512 and the
// tools on cannot take a single request: doctor says so (not all green),
// names the server's context and the tools as the fix, never
// CROW_CONTEXT_WINDOW; a roomy window passes.
func TestDoctorFixedPrefixOverWindow(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	const model = "qwen3-8b"
	env := fixture.NewEnv(t)
	vars := map[string]string{"HOME": env.Tmp, "OPENAI_BASE_URL": m.URL(), "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp, "CROW_MODEL": model}
	cli := commandLines(vars)
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: model, Window: 512})
	code, out, _ := cli("doctor")
	if code == exitOK || !strings.Contains(out, "FAIL  window     512 tokens for qwen3-8b (discovered: llama.cpp GET /props") ||
		!strings.Contains(out, "restart llama-server with a larger context (-c ") || !strings.Contains(out, "CROW_TOOLS=off") ||
		strings.Contains(out, "raise CROW_CONTEXT_WINDOW") {
		t.Fatalf("doctor at -c 512 with tools (exit %d):\n%s", code, out)
	}
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: model, Window: 32768})
	code, out, _ = cli("doctor")
	if code != exitOK || !strings.Contains(out, "ok    window     32768 tokens for qwen3-8b") {
		t.Fatalf("doctor at -c 32768 (exit %d):\n%s", code, out)
	}
}
