package request

import (
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider"
)

func TestParseModels(t *testing.T) {
	got, err := ParseModels(" gpt-4o-mini;window=128000;image;in=0.15;out=0.6 , qwen3:8b;window=32768;reserve=2048;title=Qwen 3 8B;currency=eur,")
	if err != nil {
		t.Fatal(err)
	}
	want := []Model{
		{Name: "gpt-4o-mini", ContextWindow: 128000, InputPrice: 0.15, OutputPrice: 0.6, PricesSet: true},
		{Name: "qwen3:8b", Title: "Qwen 3 8B", ContextWindow: 32768, OutputReserve: 2048, Currency: "EUR"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d models, want %d: %+v", len(got), len(want), got)
	}
	if c := got[0].ImagesConfigured; c == nil || !*c || got[1].ImagesConfigured != nil {
		t.Errorf("image flags: %v, %v; want true, unset", got[0].ImagesConfigured, got[1].ImagesConfigured)
	}
	for i := range want {
		got[i].ImagesConfigured = nil
		if got[i] != want[i] {
			t.Errorf("model %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// The image flag is three-state: image=false forces a vision family off,
// no flag leaves the family (or the endpoint) to decide.
func TestParseModelsImagesTriState(t *testing.T) {
	got, err := ParseModels("gpt-4o;image=false, gpt-4.1, deepseek-chat;image, my-model")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		images bool
		source string
	}{{false, "configured"}, {true, "model family: gpt-4.1 / gpt-4.5 / gpt-5"}, {true, "configured"}, {false, "unknown model family"}}
	for i, w := range want {
		m := got[i].WithDefaults()
		if m.Images != w.images || m.ImagesSource != w.source {
			t.Errorf("%s: images %v from %q; want %v from %q", m.Name, m.Images, m.ImagesSource, w.images, w.source)
		}
	}
}

func TestParseModelsHistoryAttributes(t *testing.T) {
	got, err := ParseModels("deepseek-reasoner;reasoning=strip;think=tag, my-devstral;tool_ids=mistral;reasoning=Echo;think=Open, b;reasoning=auto;tool_ids=as-is")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ReasoningHistory != provider.ReasoningStrip || got[1].ToolCallIDs != provider.ToolCallIDsMistral ||
		got[1].ReasoningHistory != provider.ReasoningEcho || got[2].ReasoningHistory != provider.ReasoningAuto || got[2].ToolCallIDs != provider.ToolCallIDsAsIs ||
		got[0].InlineThink != provider.InlineThinkTag || got[1].InlineThink != provider.InlineThinkOpen || got[2].InlineThink != provider.InlineThinkAuto {
		t.Fatalf("got %+v", got)
	}
}

func TestParseModelsEditTool(t *testing.T) {
	got, err := ParseModels("glm-4.6;edit=apply_patch, gpt-5;edit=edit_file, o3")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].EditTool != "apply_patch" || got[1].EditTool != "edit_file" || got[2].EditTool != "" {
		t.Fatalf("got %+v", got)
	}
}

func TestParseModelsRejectsMistakes(t *testing.T) {
	for spec, wantErr := range map[string]string{
		"a;window=0":                 "positive",
		"a;window=big":               "positive",
		"a;in=-1":                    "price",
		"a;colour=blue":              "unknown attribute",
		"a, a":                       "twice",
		";window=10":                 "no name",
		"a;window=1000;reserve=1000": "smaller than window",
		"a;image=maybe":              "true or false",
		"a;currency=dollars":         "ISO 4217",
		"a;reasoning=always":         "strip, echo or require",
		"a;tool_ids=short":           "as-is or mistral",
		"a;think=always":             "auto, tag or open",
		"a;edit=patch":               "edit_file or apply_patch",
	} {
		if _, err := ParseModels(spec); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseModels(%q) = %v, want an error containing %q", spec, err, wantErr)
		}
	}
}

func TestNormalizeModels(t *testing.T) {
	models, def := NormalizeModels(nil, "m1")
	if def != "m1" || len(models) != 1 || models[0].ContextWindow != DefaultContextWindow || models[0].OutputReserve != DefaultOutputReserve || models[0].Currency != "USD" {
		t.Fatalf("a bare default model: got %+v, %q", models, def)
	}
	models, def = NormalizeModels([]Model{{Name: "a", ContextWindow: 8000}, {Name: "b"}}, "")
	if def != "a" || models[0].OutputReserve != 2000 {
		t.Fatalf("first model is the default and the reserve fits a small window: got %+v, %q", models, def)
	}
	models, def = NormalizeModels([]Model{{Name: "a"}}, "z")
	if def != "z" || len(models) != 2 || models[0].Name != "z" {
		t.Fatalf("a default missing from the list is added: got %+v, %q", models, def)
	}
}

func TestModelCost(t *testing.T) {
	m := Model{InputPrice: 2.5, OutputPrice: 10}
	if got := m.Cost(provider.Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000}); got != 3.5 {
		t.Fatalf("cost = %v, want 3.5", got)
	}
	if (Model{}).Priced() {
		t.Fatal("a model without prices reports a cost")
	}
}
