package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestDiscoverWindow: each server family's own way of telling a model's
// window is found, against the fake model replaying that family's shape
// (streaming/fakemodel/discovery.go cites each source).
func TestDiscoverWindow(t *testing.T) {
	cases := []struct {
		d      fakemodel.Discovery
		window int
		source string
	}{
		{fakemodel.Discovery{Flavor: "vllm", Model: "Qwen/Qwen3-8B", Window: 32768}, 32768, "GET /models (max_model_len)"},
		{fakemodel.Discovery{Flavor: "openrouter", Model: "qwen/qwen3-coder", Window: 262144}, 262144, "GET /models (context_length)"},
		{fakemodel.Discovery{Flavor: "llama.cpp", Model: "qwen3-8b", Window: 16384}, 16384, "llama.cpp GET /props (default_generation_settings.n_ctx)"},
		{fakemodel.Discovery{Flavor: "ollama", Model: "qwen3:8b", Window: 12288, NumCtx: true}, 12288, "Ollama POST /api/show (num_ctx)"},
		{fakemodel.Discovery{Flavor: "ollama", Model: "qwen3:8b", Window: 40960}, 4096, "Ollama POST /api/show (no num_ctx: Ollama's default 4096, model maximum 40960)"},
		{fakemodel.Discovery{Flavor: "lmstudio", Model: "qwen3-8b-mlx", Window: 8192}, 8192, "LM Studio GET /api/v0/models (loaded_context_length)"},
	}
	for _, c := range cases {
		m := fakemodel.Start()
		m.SetDiscovery(c.d)
		got, err := DiscoverWindow(context.Background(), OpenAIConfig{BaseURL: m.URL()}, c.d.Model)
		m.Close()
		if err != nil || got.Tokens != c.window || got.Source != c.source {
			t.Errorf("%s: got %+v, %v; want %d from %q", c.d.Flavor, got, err, c.window, c.source)
		}
	}
	m := fakemodel.Start()
	defer m.Close()
	if _, err := DiscoverWindow(context.Background(), OpenAIConfig{BaseURL: m.URL()}, "unknown"); !errors.Is(err, ErrNoWindow) {
		t.Fatalf("a server that tells nothing: %v", err)
	}
	// Another model's entry is not this model's window.
	m.SetDiscovery(fakemodel.Discovery{Flavor: "vllm", Model: "other", Window: 4096})
	if got, err := DiscoverWindow(context.Background(), OpenAIConfig{BaseURL: m.URL()}, "mine"); err == nil {
		t.Fatalf("took another model's window: %+v", got)
	}
}

// FuzzWindowResponses: every discovery parser takes any bytes, and what it
// returns is a believable window.
func FuzzWindowResponses(f *testing.F) {
	for _, s := range []string{
		`{"object":"list","data":[{"id":"m","max_model_len":32768}]}`,
		`{"data":[{"id":"m","context_length":262144,"top_provider":{"context_length":131072}}]}`,
		`{"default_generation_settings":{"n_ctx":16384},"total_slots":1}`,
		`{"parameters":"num_ctx 12288\ntemperature 0.6","model_info":{"qwen3.context_length":40960}}`,
		`{"parameters":"num_ctx \u0000\xff","model_info":{"x.context_length":1e400}}`,
		`{"data":[{"id":"m","loaded_context_length":8192,"max_context_length":32768}]}`,
		"\x00\x01\x1b[2J\xff\xfe", `{"data":[{"id":"m","max_model_len":-1}]}`,
		`{"data":[{"id":"m","max_model_len":99999999999999999999}]}`,
		strings.Repeat(`{"data":[`, 20000),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(name string, n int) {
			if n < 0 || n > maxWindow {
				t.Fatalf("%s: window %d", name, n)
			}
		}
		n, _ := WindowFromModels(body, "m")
		check("models", n)
		n, _ = WindowFromProps(body)
		check("props", n)
		n, _ = WindowFromOllamaShow(body)
		check("ollama", n)
		n, _ = WindowFromLMStudio(body, "m")
		check("lmstudio", n)
	})
}
