package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/internal/origin"
)

// DiscoveredWindow is a model's context window as its endpoint reports it.
type DiscoveredWindow struct {
	Tokens int
	Source string // which request said so, e.g. "llama.cpp GET /props (n_ctx)"
}

// DefaultDiscoverTimeout bounds one window discovery, all probes included.
const DefaultDiscoverTimeout = 5 * time.Second

// maxDiscoverBody bounds a probe's response (OpenRouter's model list is
// about 1 MB).
const maxDiscoverBody = 8 << 20

// ollamaDefaultContext is the context Ollama gives a model whose Modelfile
// sets no num_ctx (docs.ollama.com/context-length: "The default context
// length in Ollama is 4096 tokens"); the server's OLLAMA_CONTEXT_LENGTH can
// raise it, which no endpoint reports, so truncation detection covers it.
const ollamaDefaultContext = 4096

// ErrNoWindow: no probe found the model's window.
var ErrNoWindow = errors.New("the endpoint does not report the model's context window")

// DiscoverWindow asks the endpoint of cfg for model's context window, trying
// each server's own way of telling it, cheapest and most common first:
//
//   - GET {base}/models: vLLM's max_model_len, OpenRouter's context_length
//     (top_provider.context_length when the model's own is missing);
//   - GET {root}/props: llama.cpp's default_generation_settings.n_ctx;
//   - POST {root}/api/show: Ollama's num_ctx parameter, else its default;
//   - GET {root}/api/v0/models: LM Studio's loaded_context_length, else
//     max_context_length.
//
// {root} is the base URL without its trailing /v1. Every response is
// untrusted and bounded; the first believable answer wins.
func DiscoverWindow(ctx context.Context, cfg OpenAIConfig, model string) (DiscoveredWindow, error) {
	base, root := endpointRoots(cfg)
	probes := []endpointProbe[int]{
		{"GET", base + "/models", "GET /models", nil, WindowFromModels},
		{"GET", root + "/props", "llama.cpp GET /props", nil, func(b []byte, _ string) (int, string) { return WindowFromProps(b) }},
		{"POST", root + "/api/show", "Ollama POST /api/show", showRequest(model), func(b []byte, _ string) (int, string) { return WindowFromOllamaShow(b) }},
		{"GET", root + "/api/v0/models", "LM Studio GET /api/v0/models", nil, WindowFromLMStudio},
	}
	n, source, err := askEndpoint(ctx, cfg, model, probes, func(n int) bool { return n > 0 }, ErrNoWindow)
	return DiscoveredWindow{Tokens: n, Source: source}, err
}

// endpointRoots are the base URL of cfg and the server's root (the base
// without its trailing /v1), where servers' own metadata routes live.
func endpointRoots(cfg OpenAIConfig) (base, root string) {
	base = baseURL(cfg)
	return base, strings.TrimSuffix(base, "/v1")
}

// endpointProbe is one request that may tell something of a model, and
// how to read its answer (the zero T and "" when it does not tell).
type endpointProbe[T any] struct {
	method, url, source string
	body                []byte
	read                func(body []byte, model string) (T, string)
}

// askEndpoint makes the probes in turn, within DefaultDiscoverTimeout in
// all, and returns the first answer told (with the request and field that
// told it); none wraps the last failure when no probe tells.
func askEndpoint[T any](ctx context.Context, cfg OpenAIConfig, model string, probes []endpointProbe[T], told func(T) bool, none error) (T, string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultDiscoverTimeout)
	defer cancel()
	hc := httpClient(cfg)
	var zero T
	var last error = none
	for _, p := range probes {
		body, err := probe(ctx, hc, cfg, p.method, p.url, p.body)
		if err != nil {
			last = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if v, field := p.read(body, model); told(v) {
			return v, p.source + " (" + field + ")", nil
		}
	}
	return zero, "", fmt.Errorf("%w (last probe: %v)", none, last)
}

func showRequest(model string) []byte {
	b, _ := json.Marshal(map[string]string{"model": model})
	return b
}

// probe makes one request with the endpoint's key and headers and returns
// its body, or an error for anything but a 200.
func probe(ctx context.Context, hc *http.Client, cfg OpenAIConfig, method, url string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range cfg.header() {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &StatusError{Method: method, URL: url, Code: resp.StatusCode}
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxDiscoverBody))
}

// header is what every request to cfg's endpoint carries: the key as
// "Authorization: Bearer <key>" (none without a key), then the configured
// headers, which may replace it.
func (cfg OpenAIConfig) header() http.Header {
	h := http.Header{}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	return h
}

// baseURL is cfg's API root without a trailing slash.
func baseURL(cfg OpenAIConfig) string {
	if base := strings.TrimRight(cfg.BaseURL, "/"); base != "" {
		return base
	}
	return DefaultBaseURL
}

// httpClient is the client of cfg's probes, kept to the base URL's origin
// (package origin): they carry the endpoint's key and headers.
func httpClient(cfg OpenAIConfig) *http.Client {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	u, err := url.Parse(baseURL(cfg))
	if err != nil || u.Host == "" {
		return hc // the request to it fails on its own
	}
	return origin.Client(hc, u)
}

// StatusError is an endpoint's answer with an HTTP status other than 200.
type StatusError struct {
	Method, URL string
	Code        int
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s %s: status %d", e.Method, e.URL, e.Code) }

// ErrNotModelList: GET /models answered 200 with something else than an
// OpenAI model list.
var ErrNotModelList = errors.New("not an OpenAI model list")

// ListModels asks GET {base}/models, with the key and headers every request
// of the client carries, for the ids of the models the endpoint serves,
// sorted. A status other than 200 is a *StatusError.
func ListModels(ctx context.Context, cfg OpenAIConfig) ([]string, error) {
	body, err := probe(ctx, httpClient(cfg), cfg, http.MethodGet, baseURL(cfg)+"/models", nil)
	if err != nil {
		return nil, err
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, ErrNotModelList
	}
	ids := make([]string, len(list.Data))
	for i, m := range list.Data {
		ids[i] = m.ID
	}
	sort.Strings(ids)
	return ids, nil
}

// modelEntry is one entry of a /models list, with every window field a
// server is known to put there.
type modelEntry struct {
	ID                  string `json:"id"`
	MaxModelLen         int64  `json:"max_model_len"`         // vLLM (ModelCard)
	ContextLength       int64  `json:"context_length"`        // OpenRouter
	LoadedContextLength int64  `json:"loaded_context_length"` // LM Studio /api/v0
	MaxContextLength    int64  `json:"max_context_length"`    // LM Studio /api/v0
	TopProvider         struct {
		ContextLength int64 `json:"context_length"`
	} `json:"top_provider"` // OpenRouter
	Architecture struct {
		InputModalities []string `json:"input_modalities"`
	} `json:"architecture"` // OpenRouter
	Type string `json:"type"` // LM Studio /api/v0: "llm", "vlm", "embeddings"
}

func findModel(body []byte, model string) *modelEntry {
	var list struct {
		Data []modelEntry `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil {
		return nil
	}
	for i := range list.Data {
		if list.Data[i].ID == model {
			return &list.Data[i]
		}
	}
	return nil
}

// WindowFromModels reads model's window from an OpenAI-style model list:
// vLLM's max_model_len, else OpenRouter's context_length, else its
// top_provider.context_length. 0: not there. The string names the field.
func WindowFromModels(body []byte, model string) (int, string) {
	e := findModel(body, model)
	if e == nil {
		return 0, ""
	}
	if w := sane(e.MaxModelLen); w > 0 {
		return w, "max_model_len"
	}
	if w := sane(e.ContextLength); w > 0 {
		return w, "context_length"
	}
	return sane(e.TopProvider.ContextLength), "top_provider.context_length"
}

// WindowFromProps reads llama.cpp's /props: default_generation_settings.n_ctx
// (the per-slot context the server enforces), or a top-level n_ctx.
func WindowFromProps(body []byte) (int, string) {
	var p struct {
		Default struct {
			NCtx int64 `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx int64 `json:"n_ctx"`
	}
	if json.Unmarshal(body, &p) != nil {
		return 0, ""
	}
	if w := sane(p.Default.NCtx); w > 0 {
		return w, "default_generation_settings.n_ctx"
	}
	return sane(p.NCtx), "n_ctx"
}

// WindowFromOllamaShow reads Ollama's /api/show: the num_ctx line of
// "parameters" when the Modelfile sets one; otherwise Ollama runs the model
// with its default context, capped by the model's own
// model_info["<arch>.context_length"].
func WindowFromOllamaShow(body []byte) (int, string) {
	var s struct {
		Parameters string                     `json:"parameters"`
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
	}
	if json.Unmarshal(body, &s) != nil {
		return 0, ""
	}
	for _, line := range strings.Split(s.Parameters, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil && sane(n) > 0 {
				return sane(n), "num_ctx"
			}
		}
	}
	trained := 0
	for k, v := range s.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			trained = max(trained, sane(jsonInt(v)))
		}
	}
	if trained == 0 {
		return 0, ""
	}
	return min(trained, ollamaDefaultContext), fmt.Sprintf("no num_ctx: Ollama's default %d, model maximum %d", ollamaDefaultContext, trained)
}

// WindowFromLMStudio reads LM Studio's /api/v0/models: the loaded
// context of a loaded model, else the model's maximum.
func WindowFromLMStudio(body []byte, model string) (int, string) {
	e := findModel(body, model)
	if e == nil {
		return 0, ""
	}
	if w := sane(e.LoadedContextLength); w > 0 {
		return w, "loaded_context_length"
	}
	return sane(e.MaxContextLength), "max_context_length"
}
