package provider

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
)

// DiscoveredImages is whether a model reads images, as its endpoint
// reports it.
type DiscoveredImages struct {
	Yes    bool
	Source string // which request said so, e.g. "llama.cpp GET /props (modalities.vision)"
}

// ErrNoImageInfo: no probe said whether the model reads images.
var ErrNoImageInfo = errors.New("the endpoint does not say whether the model reads images")

// DiscoverImages asks the endpoint of cfg whether model reads images, each
// server in its own way, with the bounds of DiscoverWindow (5 s in all, 8 MB
// a response, the endpoint's origin only):
//
//   - GET {base}/models: OpenRouter's architecture.input_modalities;
//   - GET {root}/props: llama.cpp's modalities.vision (a multimodal
//     projector is loaded);
//   - POST {root}/api/show: Ollama's capabilities ("vision");
//   - GET {root}/api/v0/models: LM Studio's type ("vlm" or "llm").
//
// The first probe that answers either way wins; ErrNoImageInfo (wrapped)
// when none does, and the caller falls back to ReadsImages.
func DiscoverImages(ctx context.Context, cfg OpenAIConfig, model string) (DiscoveredImages, error) {
	base, root := endpointRoots(cfg)
	// An answer either way is told: the reader's ok becomes part of the value.
	type answer struct{ yes, ok bool }
	read := func(f func([]byte, string) (bool, bool, string)) func([]byte, string) (answer, string) {
		return func(b []byte, model string) (answer, string) {
			yes, ok, field := f(b, model)
			return answer{yes, ok}, field
		}
	}
	bodyOnly := func(f func([]byte) (bool, bool, string)) func([]byte, string) (bool, bool, string) {
		return func(b []byte, _ string) (bool, bool, string) { return f(b) }
	}
	probes := []endpointProbe[answer]{
		{"GET", base + "/models", "GET /models", nil, read(ImagesFromModels)},
		{"GET", root + "/props", "llama.cpp GET /props", nil, read(bodyOnly(ImagesFromProps))},
		{"POST", root + "/api/show", "Ollama POST /api/show", showRequest(model), read(bodyOnly(ImagesFromOllamaShow))},
		{"GET", root + "/api/v0/models", "LM Studio GET /api/v0/models", nil, read(ImagesFromLMStudio)},
	}
	a, source, err := askEndpoint(ctx, cfg, model, probes, func(a answer) bool { return a.ok }, ErrNoImageInfo)
	return DiscoveredImages{Yes: a.yes, Source: source}, err
}

// ImagesFromModels reads OpenRouter's architecture.input_modalities for
// model from a /models list: ok is false when the list has no such entry
// or the entry no modalities (vLLM, OpenAI and most servers say nothing).
func ImagesFromModels(body []byte, model string) (yes, ok bool, field string) {
	e := findModel(body, model)
	if e == nil || len(e.Architecture.InputModalities) == 0 {
		return false, false, ""
	}
	return slices.Contains(e.Architecture.InputModalities, "image"), true, "architecture.input_modalities"
}

// ImagesFromProps reads llama.cpp's /props: modalities.vision is true when
// the server runs with a multimodal projector (--mmproj). ok is false when
// the field is missing (older servers).
func ImagesFromProps(body []byte) (yes, ok bool, field string) {
	var p struct {
		Modalities struct {
			Vision *bool `json:"vision"`
		} `json:"modalities"`
	}
	if json.Unmarshal(body, &p) != nil || p.Modalities.Vision == nil {
		return false, false, ""
	}
	return *p.Modalities.Vision, true, "modalities.vision"
}

// ImagesFromOllamaShow reads Ollama's /api/show: "vision" among the
// model's capabilities. ok is false when there are none listed (Ollama
// before 0.6 did not list them).
func ImagesFromOllamaShow(body []byte) (yes, ok bool, field string) {
	var s struct {
		Capabilities []string `json:"capabilities"`
	}
	if json.Unmarshal(body, &s) != nil || len(s.Capabilities) == 0 {
		return false, false, ""
	}
	return slices.Contains(s.Capabilities, "vision"), true, "capabilities"
}

// ImagesFromLMStudio reads LM Studio's /api/v0/models: a model of type
// "vlm" reads images, one of type "llm" does not.
func ImagesFromLMStudio(body []byte, model string) (yes, ok bool, field string) {
	e := findModel(body, model)
	if e == nil {
		return false, false, ""
	}
	switch e.Type {
	case "vlm":
		return true, true, "type vlm"
	case "llm":
		return false, true, "type llm"
	}
	return false, false, ""
}

// ImageSupport is the resolved answer to "does this model read images" and
// what gave it.
type ImageSupport struct {
	Yes    bool
	Source string // "configured", "discovered: ...", "model family: ...", "unknown model family"
}

// ResolveImages decides whether model reads images: the configuration
// (configured non-nil: the models table's image flag) wins, then what the
// endpoint said (discovered non-nil: DiscoverImages), then the model's
// family (ReadsImages); a model of no known family gets no images.
func ResolveImages(model string, configured *bool, discovered *DiscoveredImages) ImageSupport {
	switch {
	case configured != nil:
		return ImageSupport{Yes: *configured, Source: "configured"}
	case discovered != nil:
		return ImageSupport{Yes: discovered.Yes, Source: "discovered: " + discovered.Source}
	}
	if r := visionFamily(model); r != nil {
		return ImageSupport{Yes: r.images, Source: "model family: " + r.family}
	}
	return ImageSupport{Source: "unknown model family"}
}
