package config

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// loadDoc loads a configuration file with text doc, env and flags args.
func loadDoc(t *testing.T, doc string, env map[string]string, args ...string) (*Settings, error) {
	t.Helper()
	dir := t.TempDir()
	file := dir + "/c.toml"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cf := AddFlags(fs, FlagsAll)
	if err := fs.Parse(append([]string{"--config", file}, args...)); err != nil {
		t.Fatal(err)
	}
	if env == nil {
		env = map[string]string{}
	}
	env["HOME"] = dir
	return Load(cf, func(k string) string { return env[k] })
}

// TestImagesFlagTriState: a configured images flag, true or false, wins
// over the endpoint and the family; unset, the endpoint's answer and then
// the family decide.
func TestImagesFlagTriState(t *testing.T) {
	cfg, err := loadDoc(t, `[[models]]
name = "gpt-4o"
images = false

[[models]]
name = "my-finetune"
images = true

[[models]]
name = "gpt-4.1"

[[models]]
name = "deepseek-chat"
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	saysYes := &provider.DiscoveredImages{Yes: true, Source: "llama.cpp GET /props (modalities.vision)"}
	saysNo := &provider.DiscoveredImages{Yes: false, Source: "Ollama POST /api/show (capabilities)"}
	cases := []struct {
		model      string
		discovered *provider.DiscoveredImages
		want       bool
		source     string
	}{
		{"gpt-4o", saysYes, false, "configured"},
		{"my-finetune", saysNo, true, "configured"},
		{"gpt-4.1", nil, true, "model family: gpt-4.1 / gpt-4.5 / gpt-5"},
		{"gpt-4.1", saysNo, false, "discovered: Ollama POST /api/show (capabilities)"},
		{"deepseek-chat", nil, false, "model family: DeepSeek (text only)"},
		{"deepseek-chat", saysYes, true, "discovered: llama.cpp GET /props (modalities.vision)"},
		{"not-listed", nil, false, "unknown model family"},
	}
	for _, c := range cases {
		got := cfg.ResolveImages(c.model, c.discovered)
		if got.Yes != c.want || got.Source != c.source {
			t.Errorf("%s with %+v: %+v; want %v from %q", c.model, c.discovered, got, c.want, c.source)
		}
	}
	// The agent gets the flag as set (false, true) or unset.
	ac := cfg.Agent("test")
	if f := ac.Models[0].ImagesConfigured; f == nil || *f {
		t.Errorf("gpt-4o's flag: %v, want false", f)
	}
	if f := ac.Models[1].ImagesConfigured; f == nil || !*f {
		t.Errorf("my-finetune's flag: %v, want true", f)
	}
	if f := ac.Models[2].ImagesConfigured; f != nil {
		t.Errorf("gpt-4.1's flag: %v, want unset", *f)
	}

	// CROW_MODELS: "image" forces it on; without it the model is unset.
	cfg, err = loadDoc(t, "", map[string]string{"CROW_MODELS": "my-finetune;image, qwen2.5vl:7b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ImagesConfigured("my-finetune"); got == nil || !*got {
		t.Errorf("CROW_MODELS image: %v", got)
	}
	if got := cfg.ImagesConfigured("qwen2.5vl:7b"); got != nil {
		t.Errorf("CROW_MODELS without image: %v, want unset", *got)
	}
	if cfg, err = loadDoc(t, "", map[string]string{"CROW_MODELS": "gpt-4o;image=false"}); err != nil {
		t.Fatal(err)
	}
	if got := cfg.ResolveImages("gpt-4o", nil); got.Yes || got.Source != "configured" {
		t.Errorf("CROW_MODELS image=false: %+v, want forced off", got)
	}
	if cfg, err = loadDoc(t, "", map[string]string{"CROW_MODELS": "my-finetune;image, qwen2.5vl:7b"}); err != nil {
		t.Fatal(err)
	}
	if got := cfg.ImagesConfigured("qwen2.5vl:7b"); got != nil {
		t.Errorf("CROW_MODELS without image: %v, want unset", *got)
	}
	if got := cfg.ResolveImages("qwen2.5vl:7b", nil); !got.Yes {
		t.Errorf("qwen2.5vl by family: %+v", got)
	}
}

// TestImageDiscoverer: the discoverer asks the model's own provider, with
// its key, and returns what it says.
func TestImageDiscoverer(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	yes := true
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: "local-vl", Window: 8192, Images: &yes})
	cfg, err := loadDoc(t, `provider = "other"

[providers.local]
base_url = "`+m.URL()+`"

[providers.other]
base_url = "http://127.0.0.1:1/v1"

[[models]]
name = "local-vl"
provider = "local"

[[models]]
name = "elsewhere"
provider = "other"
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.ImageDiscoverer("local-vl")(context.Background(), "local-vl")
	if err != nil || !got.Yes || !strings.Contains(got.Source, "modalities.vision") {
		t.Fatalf("local-vl: %+v, %v", got, err)
	}
	if got, err := cfg.ImageDiscoverer("elsewhere")(context.Background(), "elsewhere"); err == nil {
		t.Fatalf("elsewhere asked the wrong provider: %+v", got)
	}
}

// TestImageLimits: the image limits are their own settings, checked, and
// the line follows them and the text limit unless it is set.
func TestImageLimits(t *testing.T) {
	cfg, err := loadDoc(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.ImageLimits(); l.ImageBytes != imagecheck.DefaultMaxImageBytes || l.PromptImageBytes != imagecheck.DefaultMaxPromptImageBytes {
		t.Fatalf("defaults: %+v", l)
	}
	line := imagecheck.LineBytes(agent.DefaultMaxPromptBytes, imagecheck.DefaultMaxPromptImageBytes)
	if cfg.MaxLineBytes.V != line || cfg.MaxLineBytes.From.Kind != "default" {
		t.Fatalf("default line: %d from %s, want %d", cfg.MaxLineBytes.V, cfg.MaxLineBytes.From, line)
	}
	// A client of crow reads any line crow accepts by default.
	if line > acp.DefaultMaxLineBytes {
		t.Fatalf("the default line %d is over acp.DefaultMaxLineBytes %d", line, acp.DefaultMaxLineBytes)
	}

	cfg, err = loadDoc(t, "[limits]\nimage_bytes = 4194304\nprompt_image_bytes = 8388608\n", map[string]string{"CROW_MAX_PROMPT_IMAGE_BYTES": "16777216"})
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.ImageLimits(); l.ImageBytes != 4<<20 || l.PromptImageBytes != 16<<20 {
		t.Fatalf("file and env: %+v", l)
	}
	if want := imagecheck.LineBytes(agent.DefaultMaxPromptBytes, 16<<20); cfg.MaxLineBytes.V != want {
		t.Fatalf("line for 16 MiB of images: %d, want %d", cfg.MaxLineBytes.V, want)
	}
	cfg, err = loadDoc(t, "", nil, "--max-line-bytes", "65536")
	if err != nil || cfg.MaxLineBytes.V != 65536 {
		t.Fatalf("the flag: %v, %v", cfg, err)
	}

	for _, c := range []struct {
		doc  string
		env  map[string]string
		says string
	}{
		{"[limits]\nimage_bytes = 10\n", nil, "limits.image_bytes"},
		{"[limits]\nprompt_image_bytes = 1073741824\n", nil, "limits.prompt_image_bytes"},
		{"[limits]\nimage_bytes = 8388608\nprompt_image_bytes = 4194304\n", nil, "smaller than one image's"},
		{"", map[string]string{"CROW_MAX_IMAGE_BYTES": "100"}, "CROW_MAX_IMAGE_BYTES"},
		{"", map[string]string{"CROW_MAX_PROMPT_IMAGE_BYTES": "many"}, "not a whole number"},
	} {
		if _, err := loadDoc(t, c.doc, c.env); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q %v: %v; want an error naming %q", c.doc, c.env, err, c.says)
		}
	}
}

// TestImagesShown: `config show` tells a configured flag from the family's
// default.
func TestImagesShown(t *testing.T) {
	for _, c := range []struct {
		m    ModelSpec
		want string
	}{
		{ModelSpec{Name: "gpt-4o", Images: false, ImagesSet: true}, "no"},
		{ModelSpec{Name: "deepseek-chat", Images: true, ImagesSet: true}, "yes"},
		{ModelSpec{Name: "gpt-4o"}, "auto: yes"},
		{ModelSpec{Name: "qwen2.5-coder:7b"}, "auto: no"},
		{ModelSpec{Name: "my-finetune"}, "auto"},
	} {
		if got := c.m.ImagesShown(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
}
