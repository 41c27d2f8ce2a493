package provider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// TestListModels: GET /models carries the same Authorization and headers
// as a chat request; the ids come back sorted; a refusal is a StatusError
// with its code; a 200 that is not a model list is ErrNotModelList.
func TestListModels(t *testing.T) {
	answer := map[string]struct {
		code int
		body string
	}{
		"/ok/models":     {200, `{"data":[{"id":"b"},{"id":"a"}]}`},
		"/denied/models": {401, `{"error":{"message":"bad key"}}`},
		"/html/models":   {200, `<html>`},
	}
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		a := answer[r.URL.Path]
		w.WriteHeader(a.code)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	cfg := OpenAIConfig{APIKey: "sk-1", Headers: map[string]string{"X-Title": "crow"}}

	cfg.BaseURL = srv.URL + "/ok/"
	ids, err := ListModels(context.Background(), cfg)
	if err != nil || !reflect.DeepEqual(ids, []string{"a", "b"}) {
		t.Fatalf("ids %v, %v", ids, err)
	}
	if got.Get("Authorization") != "Bearer sk-1" || got.Get("X-Title") != "crow" {
		t.Errorf("headers sent: %v", got)
	}

	cfg.BaseURL = srv.URL + "/denied"
	var se *StatusError
	if _, err := ListModels(context.Background(), cfg); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("a 401: %v, want a StatusError with code 401", err)
	}

	cfg.BaseURL = srv.URL + "/html"
	if _, err := ListModels(context.Background(), cfg); !errors.Is(err, ErrNotModelList) {
		t.Errorf("an HTML page: %v, want ErrNotModelList", err)
	}
}
