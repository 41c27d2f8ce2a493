package config

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider"
)

// The models list reaches the agent: from the config file's [[models]], or
// from CROW_MODELS, which replaces it; without a model setting the first
// listed model is the default.
func TestModelsListReachesTheAgent(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/c.toml"
	doc := `[[models]]
name = "file-a"
context_window = 16384
images = true
input_price = 1.5

[[models]]
name = "file-b"
reasoning_history = "require"
tool_call_ids = "mistral"
inline_think = "open"
edit_tool = "apply_patch"
`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string) (*Settings, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		cf := AddFlags(fs, FlagsAll)
		if err := fs.Parse([]string{"--config", file}); err != nil {
			t.Fatal(err)
		}
		env["HOME"] = dir
		return Load(cf, func(k string) string { return env[k] })
	}

	cfg, err := load(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	ac := cfg.Agent("test")
	if ac.Model != "file-a" || len(ac.Models) != 2 || ac.Models[0].ContextWindow != 16384 || ac.Models[0].ImagesConfigured == nil || !*ac.Models[0].ImagesConfigured || ac.Models[0].InputPrice != 1.5 {
		t.Fatalf("file models: got default %q, %+v", ac.Model, ac.Models)
	}
	if ac.Models[1].ReasoningHistory != provider.ReasoningRequire || ac.Models[1].ToolCallIDs != provider.ToolCallIDsMistral ||
		ac.Models[1].InlineThink != provider.InlineThinkOpen || ac.Models[0].InlineThink != provider.InlineThinkAuto {
		t.Errorf("file-b history settings: %+v", ac.Models[1])
	}
	if ac.Models[1].EditTool != "apply_patch" || ac.Models[0].EditTool != "" {
		t.Errorf("edit_tool: %q, %q", ac.Models[0].EditTool, ac.Models[1].EditTool)
	}
	if ac.ListPageSize != 50 {
		t.Errorf("list page size default: got %d", ac.ListPageSize)
	}

	cfg, err = load(map[string]string{"CROW_MODELS": "env-x;window=4096, env-y", "CROW_MODEL": "env-y", "CROW_LIST_PAGE_SIZE": "7"})
	if err != nil {
		t.Fatal(err)
	}
	ac = cfg.Agent("test")
	if ac.Model != "env-y" || len(ac.Models) != 2 || ac.Models[0].Name != "env-x" || ac.Models[0].ContextWindow != 4096 || ac.ListPageSize != 7 {
		t.Fatalf("CROW_MODELS: got default %q, %+v, page %d", ac.Model, ac.Models, ac.ListPageSize)
	}

	if _, err := load(map[string]string{"CROW_MODELS": "x;window=lots"}); err == nil || !strings.Contains(err.Error(), "CROW_MODELS") {
		t.Fatalf("a bad CROW_MODELS must be a usage error naming it, got %v", err)
	}
	if _, err := load(map[string]string{"CROW_LIST_PAGE_SIZE": "0"}); err == nil {
		t.Fatal("a page size of 0 was accepted")
	}
	if cfg, err := load(map[string]string{"CROW_TITLES": "model"}); err != nil || !cfg.Agent("test").ModelTitles {
		t.Fatalf("CROW_TITLES=model: %v", err)
	}
	if _, err := load(map[string]string{"CROW_TITLES": "ai"}); err == nil {
		t.Fatal("CROW_TITLES=ai was accepted")
	}
}
