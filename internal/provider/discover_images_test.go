package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestDiscoverImages: each server family's way of telling whether a model
// reads images is found, both ways, against the fake model replaying that
// family's shape.
func TestDiscoverImages(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		d      fakemodel.Discovery
		want   bool
		source string
	}{
		{fakemodel.Discovery{Flavor: "openrouter", Model: "openai/gpt-4o", Window: 128000, Images: &yes}, true, "GET /models (architecture.input_modalities)"},
		{fakemodel.Discovery{Flavor: "openrouter", Model: "deepseek/deepseek-chat", Window: 128000, Images: &no}, false, "GET /models (architecture.input_modalities)"},
		{fakemodel.Discovery{Flavor: "llama.cpp", Model: "gemma-3-4b", Window: 16384, Images: &yes}, true, "llama.cpp GET /props (modalities.vision)"},
		// A family that reads images, served without its projector.
		{fakemodel.Discovery{Flavor: "llama.cpp", Model: "gemma-3-4b", Window: 16384, Images: &no}, false, "llama.cpp GET /props (modalities.vision)"},
		{fakemodel.Discovery{Flavor: "ollama", Model: "qwen2.5vl:7b", Window: 8192, Images: &yes}, true, "Ollama POST /api/show (capabilities)"},
		{fakemodel.Discovery{Flavor: "ollama", Model: "qwen3:8b", Window: 8192, Images: &no}, false, "Ollama POST /api/show (capabilities)"},
		{fakemodel.Discovery{Flavor: "lmstudio", Model: "qwen2-vl-7b-instruct", Window: 8192, Images: &yes}, true, "LM Studio GET /api/v0/models (type vlm)"},
		{fakemodel.Discovery{Flavor: "lmstudio", Model: "qwen3-8b-mlx", Window: 8192}, false, "LM Studio GET /api/v0/models (type llm)"},
	}
	for _, c := range cases {
		m := fakemodel.Start()
		m.SetDiscovery(c.d)
		got, err := DiscoverImages(context.Background(), OpenAIConfig{BaseURL: m.URL()}, c.d.Model)
		m.Close()
		if err != nil || got.Yes != c.want || got.Source != c.source {
			t.Errorf("%s %s: got %+v, %v; want %v from %q", c.d.Flavor, c.d.Model, got, err, c.want, c.source)
		}
	}
	m := fakemodel.Start()
	defer m.Close()
	// vLLM says nothing about images; neither do the older servers.
	m.SetDiscovery(fakemodel.Discovery{Flavor: "vllm", Model: "Qwen/Qwen2.5-VL-7B-Instruct", Window: 32768})
	if got, err := DiscoverImages(context.Background(), OpenAIConfig{BaseURL: m.URL()}, "Qwen/Qwen2.5-VL-7B-Instruct"); !errors.Is(err, ErrNoImageInfo) {
		t.Fatalf("vLLM: got %+v, %v; want ErrNoImageInfo", got, err)
	}
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: "old", Window: 4096})
	if got, err := DiscoverImages(context.Background(), OpenAIConfig{BaseURL: m.URL()}, "old"); !errors.Is(err, ErrNoImageInfo) {
		t.Fatalf("llama.cpp without modalities: got %+v, %v", got, err)
	}
	// Another model's entry says nothing about this one.
	m.SetDiscovery(fakemodel.Discovery{Flavor: "openrouter", Model: "other", Window: 4096, Images: &yes})
	if got, err := DiscoverImages(context.Background(), OpenAIConfig{BaseURL: m.URL()}, "mine"); err == nil {
		t.Fatalf("took another model's answer: %+v", got)
	}
}

// TestImagesFromBodies: the parsers against bodies shaped as each server
// documents them, extra fields included.
func TestImagesFromBodies(t *testing.T) {
	openrouter := `{"data":[{"id":"x-ai/grok-3","architecture":{"modality":"text->text","input_modalities":["text"],"output_modalities":["text"]}},
		{"id":"google/gemini-2.5-flash","context_length":1048576,"architecture":{"modality":"text+image->text","input_modalities":["image","text","file"],"output_modalities":["text"],"tokenizer":"Gemini"}}]}`
	if yes, ok, _ := ImagesFromModels([]byte(openrouter), "google/gemini-2.5-flash"); !yes || !ok {
		t.Errorf("OpenRouter gemini: %v %v", yes, ok)
	}
	if yes, ok, _ := ImagesFromModels([]byte(openrouter), "x-ai/grok-3"); yes || !ok {
		t.Errorf("OpenRouter grok-3 (text only): %v %v", yes, ok)
	}
	if _, ok, _ := ImagesFromModels([]byte(`{"data":[{"id":"m","max_model_len":4096}]}`), "m"); ok {
		t.Error("vLLM's entry read as an answer")
	}
	props := `{"default_generation_settings":{"n_ctx":8192},"total_slots":1,"modalities":{"vision":true,"audio":false},"build_info":"b6000"}`
	if yes, ok, _ := ImagesFromProps([]byte(props)); !yes || !ok {
		t.Errorf("llama.cpp props: %v %v", yes, ok)
	}
	if yes, ok, _ := ImagesFromProps([]byte(strings.Replace(props, `"vision":true`, `"vision":false`, 1))); yes || !ok {
		t.Errorf("llama.cpp props without projector: %v %v", yes, ok)
	}
	if _, ok, _ := ImagesFromProps([]byte(`{"modalities":{"vision":"yes"}}`)); ok {
		t.Error("a string read as a boolean")
	}
	show := `{"modelfile":"...","capabilities":["completion","vision"],"model_info":{"gemma3.context_length":131072}}`
	if yes, ok, _ := ImagesFromOllamaShow([]byte(show)); !yes || !ok {
		t.Errorf("Ollama show: %v %v", yes, ok)
	}
	if _, ok, _ := ImagesFromOllamaShow([]byte(`{"parameters":"num_ctx 4096"}`)); ok {
		t.Error("Ollama without capabilities read as an answer")
	}
	lm := `{"object":"list","data":[{"id":"e","type":"embeddings"},{"id":"v","type":"vlm"}]}`
	if _, ok, _ := ImagesFromLMStudio([]byte(lm), "e"); ok {
		t.Error("an embeddings model read as an answer")
	}
	if yes, ok, _ := ImagesFromLMStudio([]byte(lm), "v"); !yes || !ok {
		t.Errorf("LM Studio vlm: %v %v", yes, ok)
	}
}

// TestResolveImages: the configuration wins over the endpoint, the
// endpoint over the family, and an unknown family gets no images.
func TestResolveImages(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		model      string
		configured *bool
		discovered *DiscoveredImages
		want       bool
		source     string
	}{
		{"gpt-4o", nil, nil, true, "model family: gpt-4o / chatgpt-4o"},
		{"deepseek-chat", nil, nil, false, "model family: DeepSeek (text only)"},
		{"my-finetune", nil, nil, false, "unknown model family"},
		{"my-finetune", nil, &DiscoveredImages{Yes: true, Source: "llama.cpp GET /props (modalities.vision)"}, true, "discovered: llama.cpp GET /props (modalities.vision)"},
		{"gemma3:4b", nil, &DiscoveredImages{Yes: false, Source: "Ollama POST /api/show (capabilities)"}, false, "discovered: Ollama POST /api/show (capabilities)"},
		{"gpt-4o", &no, &DiscoveredImages{Yes: true, Source: "x"}, false, "configured"},
		{"my-finetune", &yes, nil, true, "configured"},
		{"deepseek-chat", &yes, &DiscoveredImages{Yes: false, Source: "x"}, true, "configured"},
	}
	for _, c := range cases {
		got := ResolveImages(c.model, c.configured, c.discovered)
		if got.Yes != c.want || got.Source != c.source {
			t.Errorf("ResolveImages(%q, %v, %+v) = %+v; want %v from %q", c.model, c.configured, c.discovered, got, c.want, c.source)
		}
	}
}

// FuzzImageResponses: every image-discovery parser takes any bytes without
// panicking, and says nothing (ok false) about a body it cannot read.
func FuzzImageResponses(f *testing.F) {
	for _, s := range []string{
		`{"data":[{"id":"m","architecture":{"input_modalities":["text","image"]}}]}`,
		`{"data":[{"id":"m","architecture":{"input_modalities":"image"}}]}`,
		`{"modalities":{"vision":true,"audio":false}}`,
		`{"modalities":{"vision":null}}`,
		`{"capabilities":["completion","vision"]}`,
		`{"capabilities":["\u0000vision\xff"]}`,
		`{"data":[{"id":"m","type":"vlm"}]}`,
		"\x00\x01\x1b[2J\xff\xfe", `{"data":[{"id":"m","type":"\x1b]0;x\x07"}]}`,
		strings.Repeat(`{"data":[`, 20000),
		`{"data":[{"id":"m","architecture":{"input_modalities":[` + strings.Repeat(`"image",`, 10000) + `"text"]}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(name string, yes, ok bool, field string) {
			if !ok && (yes || field != "") {
				t.Fatalf("%s: no answer, yet yes=%v field=%q", name, yes, field)
			}
			if ok && field == "" {
				t.Fatalf("%s: an answer without its field", name)
			}
		}
		yes, ok, field := ImagesFromModels(body, "m")
		check("models", yes, ok, field)
		yes, ok, field = ImagesFromProps(body)
		check("props", yes, ok, field)
		yes, ok, field = ImagesFromOllamaShow(body)
		check("ollama", yes, ok, field)
		yes, ok, field = ImagesFromLMStudio(body, "m")
		check("lmstudio", yes, ok, field)
	})
}
