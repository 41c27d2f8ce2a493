package config

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// updateSink is an ACP client that accepts session updates and nothing else.
type updateSink struct{ acp.Client }

func (updateSink) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

// TestPerModelProviders: two [[models]] entries on two providers (a local
// server and a remote one with its own key and headers); a session that
// switches model with the model selector sends each request to the
// endpoint of its current model, with that endpoint's key and headers only.
// The remote provider's key is found like the default provider's: in its
// api_key_env variable, else in the credentials file `crow-acp login`
// writes, also when it is saved while the agent runs (before the fix, a
// provider other than the default read only the environment).
func TestPerModelProviders(t *testing.T) {
	for _, how := range []string{"env", "credentials file", "login while running"} {
		t.Run(how, func(t *testing.T) { testPerModelProviders(t, how) })
	}
}

func testPerModelProviders(t *testing.T, how string) {
	local, remote := fakemodel.Start(), fakemodel.Start()
	defer local.Close()
	defer remote.Close()
	dir := t.TempDir()
	doc := `model = "qwen3:8b"
provider = "ollama"

[providers.ollama]
base_url = "` + local.URL() + `"

[providers.openrouter]
base_url = "` + remote.URL() + `"
api_key_env = "OPENROUTER_API_KEY"
headers = { "HTTP-Referer" = "https://example.org" }

[[models]]
name = "qwen3:8b"
provider = "ollama"

[[models]]
name = "anthropic/claude-sonnet-4"
provider = "openrouter"
`
	env := map[string]string{"OPENAI_API_KEY": "sk-wrong"}
	login := func() {
		t.Helper()
		if err := SaveCredential(filepath.Join(dir, ".config", "crow-acp", "credentials"), "OPENROUTER_API_KEY", "sk-or-test"); err != nil {
			t.Fatal(err)
		}
	}
	switch how {
	case "env":
		env["OPENROUTER_API_KEY"] = "sk-or-test"
	case "credentials file":
		login()
	}
	cfg, _, err := loadTestConfigIn(t, dir, doc, env)
	if err != nil {
		t.Fatal(err)
	}
	wantAtLoad := "sk-or-test"
	if how == "login while running" {
		wantAtLoad = ""
	}
	if got := cfg.ClientConfig("openrouter").APIKey; got != wantAtLoad {
		t.Fatalf("the openrouter key at load: %q, want %q", got, wantAtLoad)
	}
	if how == "login while running" {
		login()
	}
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "crow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ac := cfg.Agent("test")
	ac.NoTools = true
	a := agent.New(updateSink{}, store, cfg.ModelClient(), ac, nil)
	defer a.Close()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(text string) {
		t.Helper()
		if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}); err != nil {
			t.Fatal(err)
		}
	}
	ask("first, locally")
	value, _ := json.Marshal("anthropic/claude-sonnet-4")
	if _, err := a.SetSessionConfigOption(ctx, &acp.SetSessionConfigOptionRequest{SessionID: s.SessionID, ConfigID: "model", Value: value}); err != nil {
		t.Fatal(err)
	}
	ask("then remotely")
	value, _ = json.Marshal("qwen3:8b")
	if _, err := a.SetSessionConfigOption(ctx, &acp.SetSessionConfigOptionRequest{SessionID: s.SessionID, ConfigID: "model", Value: value}); err != nil {
		t.Fatal(err)
	}
	ask("and back")

	lr, rr := local.Requests(), remote.Requests()
	if len(lr) != 2 || len(rr) != 1 {
		t.Fatalf("local got %d requests, remote %d: want 2 and 1", len(lr), len(rr))
	}
	if !strings.Contains(string(rr[0]), `"model":"anthropic/claude-sonnet-4"`) || !strings.Contains(string(rr[0]), "then remotely") {
		t.Fatalf("remote request: %s", rr[0])
	}
	if !strings.Contains(string(lr[1]), `"model":"qwen3:8b"`) || !strings.Contains(string(lr[1]), "then remotely") {
		t.Fatalf("the local request after switching back lacks the history: %s", lr[1])
	}
	rh, lh := remote.Headers()[0], local.Headers()
	if rh.Get("Authorization") != "Bearer sk-or-test" || rh.Get("HTTP-Referer") != "https://example.org" {
		t.Fatalf("remote headers: %v", rh)
	}
	for _, h := range lh {
		if h.Get("HTTP-Referer") != "" || strings.Contains(h.Get("Authorization"), "sk-or-test") {
			t.Fatalf("the remote provider's key or headers reached the local endpoint: %v", h)
		}
	}
}

// TestIsOllama: silent-truncation checks apply to Ollama endpoints only.
func TestIsOllama(t *testing.T) {
	for _, c := range []struct {
		provider, url string
		want          bool
	}{
		{"ollama", "http://gpu-box:8080/v1", true},
		{"local-Ollama", "", true},
		{"", "http://127.0.0.1:11434/v1", true},
		{"vllm", "http://127.0.0.1:8000/v1", false},
		{"", "https://openrouter.ai/api/v1", false},
	} {
		if got := isOllama(c.provider, c.url); got != c.want {
			t.Errorf("isOllama(%q, %q) = %v", c.provider, c.url, got)
		}
	}
}

// TestModelFlagSelectsProvider: --model picks the model's provider as the
// one the command talks to, so `crow-acp login --model NAME` checks and
// saves the key of NAME's provider, under its api_key_env (README,
// Providers).
func TestModelFlagSelectsProvider(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.toml")
	doc := `model = "qwen3:8b"
provider = "ollama"
[providers.ollama]
base_url = "http://127.0.0.1:11434/v1"
[providers.openrouter]
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
[[models]]
name = "qwen3:8b"
[[models]]
name = "anthropic/claude-sonnet-4"
provider = "openrouter"
`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	cf := AddFlags(fs, FlagsModel)
	if err := fs.Parse([]string{"--config", file, "--model", "anthropic/claude-sonnet-4"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(cf, func(k string) string { return map[string]string{"HOME": dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.V != "openrouter" || cfg.APIKeyEnv.V != "OPENROUTER_API_KEY" || cfg.BaseURL.V != "https://openrouter.ai/api/v1" {
		t.Errorf("--model anthropic/claude-sonnet-4: provider %q, key variable %q, endpoint %q", cfg.Provider.V, cfg.APIKeyEnv.V, cfg.BaseURL.V)
	}
}
