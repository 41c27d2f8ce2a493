package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Discovery scripts how the server tells a model's context window, the way
// one server family does (each shape as that server documents it):
//
//   - "vllm": GET /v1/models lists the model with max_model_len;
//   - "openrouter": GET /v1/models lists it with context_length (and
//     top_provider.context_length);
//   - "llama.cpp": GET /props has default_generation_settings.n_ctx;
//   - "ollama": POST /api/show has parameters "num_ctx N" (when NumCtx) and
//     model_info["qwen3.context_length"];
//   - "lmstudio": GET /api/v0/models lists it with loaded_context_length
//     and max_context_length.
//
// Endpoints of the other families answer 404, as those servers do.
type Discovery struct {
	Flavor string
	Model  string
	Window int
	// NumCtx (ollama): the Modelfile sets num_ctx; otherwise only the
	// model's trained context_length (Window) is reported.
	NumCtx bool
	// Images, when set, is told too: OpenRouter's
	// architecture.input_modalities, llama.cpp's modalities.vision,
	// Ollama's capabilities, LM Studio's type ("vlm" or "llm"; "llm" when
	// unset, as before).
	Images *bool
	// Once: the window is told in one answer only, then the server knows
	// the model no more, so a later process has it only from a cache.
	Once bool
}

// SetDiscovery makes the server tell windows as d says.
func (s *Server) SetDiscovery(d Discovery) {
	s.mu.Lock()
	s.discovery = d
	s.mu.Unlock()
}

// DiscoveryRequests counts the requests made to the window endpoints
// (GET /props, POST /api/show, GET /api/v0/models) and to GET /v1/models.
func (s *Server) DiscoveryRequests() int { return int(s.discoveryHits.Load()) }

func (s *Server) discoveryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /props", s.props)
	mux.HandleFunc("POST /api/show", s.ollamaShow)
	mux.HandleFunc("GET /api/v0/models", s.lmStudioModels)
}

func (s *Server) currentDiscovery() Discovery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discovery
}

// told notes that the window was given out; a Once discovery ends.
func (s *Server) told() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.discovery.Once {
		s.discovery = Discovery{}
	}
}

// modelEntries is the data of GET /v1/models.
func (s *Server) modelEntries() []map[string]any {
	s.discoveryHits.Add(1)
	out := []map[string]any{{"id": ModelID, "object": "model", "created": created, "owned_by": "fakemodel"}}
	d := s.currentDiscovery()
	if d.Model == "" {
		return out
	}
	e := map[string]any{"id": d.Model, "object": "model", "created": created, "owned_by": "fakemodel"}
	switch d.Flavor {
	case "vllm": // vllm/entrypoints/openai/protocol.py ModelCard
		e["root"], e["max_model_len"] = d.Model, d.Window
	case "openrouter": // openrouter.ai/docs/api-reference/list-available-models
		e["context_length"] = d.Window
		e["top_provider"] = map[string]any{"context_length": d.Window, "is_moderated": false}
		if d.Images != nil {
			in := []string{"text"}
			if *d.Images {
				in = append(in, "image")
			}
			e["architecture"] = map[string]any{"input_modalities": in, "output_modalities": []string{"text"}, "tokenizer": "Other"}
		}
	default:
		return append(out, e)
	}
	s.told()
	return append(out, e)
}

func (s *Server) props(w http.ResponseWriter, r *http.Request) {
	s.discoveryHits.Add(1)
	d := s.currentDiscovery()
	if d.Flavor != "llama.cpp" {
		writeError(w, http.StatusNotFound, "File Not Found")
		return
	}
	// llama.cpp tools/server: /props
	s.told()
	props := map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": d.Window, "params": map[string]any{"n_predict": -1}},
		"total_slots":                 1,
		"model_path":                  "/models/" + d.Model + ".gguf",
		"build_info":                  "b0000-fake",
	}
	if d.Images != nil {
		props["modalities"] = map[string]any{"vision": *d.Images, "audio": false}
	}
	writeJSON(w, props)
}

func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	s.discoveryHits.Add(1)
	d := s.currentDiscovery()
	var req struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req)
	if d.Flavor != "ollama" {
		writeError(w, http.StatusNotFound, "404 page not found")
		return
	}
	if req.Model != d.Model {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": fmt.Sprintf("model '%s' not found", req.Model)})
		return
	}
	params := "temperature 0.6\ntop_k 20"
	if d.NumCtx {
		params = fmt.Sprintf("num_ctx %d\n%s", d.Window, params)
	}
	// docs.ollama.com/api: POST /api/show
	s.told()
	show := map[string]any{
		"parameters": params,
		"model_info": map[string]any{"general.architecture": "qwen3", "qwen3.context_length": d.Window},
		"details":    map[string]any{"family": "qwen3", "format": "gguf"},
	}
	if d.Images != nil {
		caps := []string{"completion", "tools"}
		if *d.Images {
			caps = append(caps, "vision")
		}
		show["capabilities"] = caps
	}
	writeJSON(w, show)
}

func (s *Server) lmStudioModels(w http.ResponseWriter, r *http.Request) {
	s.discoveryHits.Add(1)
	d := s.currentDiscovery()
	if d.Flavor != "lmstudio" {
		writeError(w, http.StatusNotFound, "Unexpected endpoint or method.")
		return
	}
	// lmstudio.ai/docs/app/api/endpoints/rest: GET /api/v0/models
	s.told()
	typ := "llm"
	if d.Images != nil && *d.Images {
		typ = "vlm"
	}
	writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
		"id": d.Model, "object": "model", "type": typ, "state": "loaded",
		"max_context_length": d.Window * 4, "loaded_context_length": d.Window,
	}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// ParseDiscovery reads the "discovery" line of a corpus fixture's provider
// section, "discovery FLAVOR MODEL WINDOW [num_ctx]" (flavors as in
// Discovery), and returns the other lines for ParseRules. At most one
// discovery line; nil when there is none. The window is told Once: the
// process a fixture's restart starts can only have it from its cache.
func ParseDiscovery(text []byte) (*Discovery, []byte, error) {
	var d *Discovery
	var rest []byte
	for i, line := range strings.SplitAfter(string(text), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "discovery" {
			rest = append(rest, line...)
			continue
		}
		if d != nil {
			return nil, nil, fmt.Errorf("fakemodel: provider line %d: a second discovery line", i+1)
		}
		if len(f) < 4 || len(f) > 5 || (len(f) == 5 && f[4] != "num_ctx") {
			return nil, nil, fmt.Errorf("fakemodel: provider line %d: want discovery FLAVOR MODEL WINDOW [num_ctx], got %q", i+1, strings.TrimSpace(line))
		}
		switch f[1] {
		case "vllm", "openrouter", "llama.cpp", "ollama", "lmstudio":
		default:
			return nil, nil, fmt.Errorf("fakemodel: provider line %d: unknown discovery flavor %q (vllm, openrouter, llama.cpp, ollama, lmstudio)", i+1, f[1])
		}
		window, err := strconv.Atoi(f[3])
		if err != nil || window <= 0 {
			return nil, nil, fmt.Errorf("fakemodel: provider line %d: window %q is not a positive number", i+1, f[3])
		}
		d = &Discovery{Flavor: f[1], Model: f[2], Window: window, NumCtx: len(f) == 5, Once: true}
	}
	return d, rest, nil
}
