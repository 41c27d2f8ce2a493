package provider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// A redirect to another origin is never followed: the request carries the
// endpoint's key and configured headers, which must not reach another host
// (openai-go's origin guard did this for the chat request before it was
// sent without the SDK's root package). The other origin here is another
// port of 127.0.0.1.
func TestChatRedirectToOtherOriginRefused(t *testing.T) {
	var leaked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		w.WriteHeader(500)
	}))
	defer other.Close()
	for _, code := range []int{301, 302, 307, 308} {
		endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/v1/chat/completions", code)
		}))
		c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: endpoint.URL + "/v1", APIKey: "sk-secret-key",
			Headers: map[string]string{"X-Api-Key": "another-secret"}})
		_, err := c.Stream(context.Background(), simpleReq, nil)
		endpoint.Close()
		if err == nil || !strings.Contains(err.Error(), "origin") {
			t.Errorf("redirect %d to another origin: err %v, want the origin refused", code, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("redirect %d: the error shows a secret: %v", code, err)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
}

// A redirect within the endpoint's origin is followed, with the body sent
// again (307 keeps the method and body).
func TestChatRedirectWithinOriginFollowed(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "moved but fine"})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old/chat/completions" {
			http.Redirect(w, r, "/v1/chat/completions", http.StatusTemporaryRedirect)
			return
		}
		// The fake model behind the same origin.
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, srv.URL()+"/chat/completions", r.Body)
		req.Header = r.Header.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(502)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	defer front.Close()
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: front.URL + "/old"})
	evs, _, err := collect(t, c, simpleReq)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(texts(evs, provider.EventText), ""); got != "moved but fine" {
		t.Errorf("text %q, want the reply behind the redirect", got)
	}
}

// The chat request goes to the base URL's path plus chat/completions, with
// or without a trailing slash, as JSON, with the key and the configured
// headers (a configured header wins over a default one).
func TestChatRequestURLAndHeaders(t *testing.T) {
	for _, base := range []string{"/v1", "/v1/", "/api/openai/v1"} {
		var got *http.Request
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = r.Clone(context.Background())
			w.WriteHeader(404)
		}))
		c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: hs.URL + base, APIKey: "sk-k",
			Headers: map[string]string{"X-Title": "crow", "Accept": "text/event-stream"}})
		_, err := c.Stream(context.Background(), simpleReq, nil)
		hs.Close()
		var ae *provider.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 404 {
			t.Fatalf("base %s: err %v, want the 404", base, err)
		}
		want := strings.TrimSuffix(base, "/") + "/chat/completions"
		if got.URL.Path != want || got.Method != http.MethodPost {
			t.Errorf("base %s: %s %s, want POST %s", base, got.Method, got.URL.Path, want)
		}
		for k, v := range map[string]string{"Content-Type": "application/json", "Authorization": "Bearer sk-k",
			"X-Title": "crow", "Accept": "text/event-stream", "User-Agent": "crow-acp"} {
			if got.Header.Get(k) != v {
				t.Errorf("base %s: header %s = %q, want %q", base, k, got.Header.Get(k), v)
			}
		}
		if got.ContentLength <= 0 || len(got.TransferEncoding) != 0 {
			t.Errorf("base %s: length %d, transfer encoding %v; want a length, not chunked", base, got.ContentLength, got.TransferEncoding)
		}
	}
}

// A base URL that is not http(s) with a host fails each request with a
// clear error, before anything is sent.
func TestChatBadBaseURL(t *testing.T) {
	for _, base := range []string{"ftp://example.test/v1", "localhost:8080/v1", "http://%zz"} {
		c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: base, APIKey: "sk-k"})
		_, err := c.Stream(context.Background(), simpleReq, nil)
		if err == nil || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("base %q: err %v, want a base URL error", base, err)
		}
	}
}

// The probes of the endpoint (its model list, its window) carry the same
// credentials and are kept to its origin too: net/http alone would follow
// the redirect with a custom header such as an api-key.
func TestProbeRedirectToOtherOriginRefused(t *testing.T) {
	var leaked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		w.Write([]byte(`{"data":[{"id":"m","max_model_len":4096}]}`))
	}))
	defer other.Close()
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer endpoint.Close()
	cfg := provider.OpenAIConfig{BaseURL: endpoint.URL + "/v1", Headers: map[string]string{"Api-Key": "secret"}}
	if ids, err := provider.ListModels(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "origin") {
		t.Errorf("ListModels: %v, %v; want the origin refused", ids, err)
	}
	if w, err := provider.DiscoverWindow(context.Background(), cfg, "m"); err == nil {
		t.Errorf("DiscoverWindow: %+v from another origin, want an error", w)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
}
