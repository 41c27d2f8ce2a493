package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// exec in process: a session continued, settings it does not need, the
// context window it learns and the one it is given. ./e2e runs exec on a
// terminal and on pipes.

// TestExecContinueSendsHistory: --session continues a stored session, and
// the model receives the earlier conversation with the new prompt.
func TestExecContinueSendsHistory(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	m.Enqueue(fakemodel.Reply{Text: "first answer"}, fakemodel.Reply{Text: "second answer"})
	env := fixture.NewEnv(t)
	vars := map[string]string{"OPENAI_BASE_URL": m.URL(), "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	cli := commandLines(vars)
	code, out, errs := cli("exec", "--cwd", env.Dir, "remember the word kestrel")
	if code != exitOK || out != "first answer\n" {
		t.Fatalf("first exec: %d %q %q", code, out, errs)
	}
	id := crowtest.SessionID.FindString(errs)
	if id == "" {
		t.Fatalf("no session id on stderr: %q", errs)
	}
	code, out, errs = cli("exec", "--session", id, "which word?")
	if code != exitOK || out != "second answer\n" {
		t.Fatalf("second exec: %d %q %q", code, out, errs)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for _, want := range []string{"remember the word kestrel", "first answer", "which word?"} {
		if !bytes.Contains(reqs[1], []byte(want)) {
			t.Errorf("second request lacks %q: %s", want, reqs[1])
		}
	}
	_, show, _ := cli("sessions", "show", id)
	if strings.Count(show, "── user") != 2 || strings.Count(show, "── assistant") != 2 {
		t.Errorf("stored session:\n%s", show)
	}
}

// TestStoreCommandsIgnoreModelSettings: commands that only read the store
// do not fail on a model setting they never use (issue 32: sessions list
// exited 2 when OPENAI_BASE_URL was not a URL).
func TestStoreCommandsIgnoreModelSettings(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	m.Enqueue(fakemodel.Reply{Text: "stored answer"})
	env := fixture.NewEnv(t)
	vars := map[string]string{"OPENAI_BASE_URL": m.URL(), "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	cli := commandLines(vars)
	code, _, errs := cli("exec", "--cwd", env.Dir, "hello")
	id := crowtest.SessionID.FindString(errs)
	if code != exitOK || id == "" {
		t.Fatalf("exec: %d %q", code, errs)
	}
	vars["OPENAI_BASE_URL"] = "localhost:11434" // not a URL
	vars["CROW_CONTEXT_WINDOW"] = "many"        // not a number
	for _, args := range [][]string{{"sessions", "list"}, {"sessions", "show", id}, {"sessions", "export", id}} {
		code, out, errs := cli(args...)
		if code != exitOK || !strings.Contains(out, id[:8]) && !strings.Contains(out, "stored answer") {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q", args, code, out, errs)
		}
	}
	// A command that talks to the model still names the bad setting.
	delete(vars, "CROW_CONTEXT_WINDOW")
	if code, _, errs := cli("exec", "--cwd", env.Dir, "hi"); code != exitUsage || !strings.Contains(errs, "OPENAI_BASE_URL") {
		t.Errorf("exec with a bad endpoint: exit %d, %q", code, errs)
	}
}

// longPrompt is about words*1.3 tokens of prose.
func longPrompt(words int) string {
	w := strings.Fields("the parser returns an error when the input is empty and the evaluator divides by zero so we add tests")
	var b strings.Builder
	for i := 0; i < words; i++ {
		b.WriteString(w[i%len(w)])
		b.WriteByte(' ')
	}
	return b.String()
}

// TestWindowPoisonRefused: one lying answer of the endpoint (a 400 naming
// a 300-token window, llama.cpp's /props with n_ctx 1, an Ollama usage
// report of prompt_tokens 1) is not taken as the model's window: nothing
// is cached, and the next process sends the next prompt instead of
// refusing it.
func TestWindowPoisonRefused(t *testing.T) {
	const model = "qwen3-8b"
	cases := []struct {
		name   string
		setup  func(m *fakemodel.Server, env fixture.Env, vars map[string]string)
		prompt string
		failOK bool // the poisoned request itself fails (a refusal)
	}{
		{"refusal naming 300 tokens", func(m *fakemodel.Server, _ fixture.Env, _ map[string]string) {
			m.Enqueue(fakemodel.Reply{Status: 400, ErrorBody: `{"object":"error","message":"This model's maximum context length is 300 tokens. However, you requested 900 tokens. Please reduce the length of the messages.","type":"BadRequestError","code":400}`})
		}, "hello", true},
		{"llama.cpp n_ctx 1", func(m *fakemodel.Server, _ fixture.Env, _ map[string]string) {
			m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: model, Window: 1})
		}, "hello", false},
		{"Ollama prompt_tokens 1", func(m *fakemodel.Server, env fixture.Env, vars map[string]string) {
			// Ollama is the provider whose usage is checked for silent truncation.
			dir := filepath.Join(env.Tmp, "crow-acp")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			cfg := "provider = \"ollama\"\n\n[providers.ollama]\nbase_url = \"" + m.URL() + "\"\n"
			if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			delete(vars, "OPENAI_BASE_URL")
			m.Enqueue(fakemodel.Reply{Text: "ok", Usage: &fakemodel.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}})
		}, longPrompt(2000), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := fakemodel.Start()
			defer m.Close()
			env := fixture.NewEnv(t)
			vars := map[string]string{"HOME": env.Tmp, "OPENAI_BASE_URL": m.URL(), "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp,
				"CROW_MODEL": model, "CROW_MODEL_RETRY_DELAY": "1ms"}
			c.setup(m, env, vars)
			cli := commandLines(vars)
			code, _, errs := cli("exec", "--cwd", env.Dir, c.prompt)
			if code != exitOK && !c.failOK {
				t.Fatalf("poisoned exec: %d %s", code, errs)
			}
			if w, ok := cachedWindowOf(t, env.DBPath, m.URL(), model); ok {
				t.Fatalf("the lie was cached: %+v", w)
			}
			m.Enqueue(fakemodel.Reply{Text: "still fine"})
			before := len(m.Requests())
			code, out, errs := cli("exec", "--cwd", env.Dir, "and now?")
			if code != exitOK || out != "still fine\n" || len(m.Requests()) != before+1 {
				t.Fatalf("the next process refused the prompt: %d %q %s", code, out, errs)
			}
		})
	}
}

// TestConfiguredWindowWinsOverLearned: with a learned window in the cache,
// CROW_CONTEXT_WINDOW is what the next process uses (a prompt larger than
// the learned window is sent), and config show says so; without it the
// learned window applies and config show names it.
func TestConfiguredWindowWinsOverLearned(t *testing.T) {
	const model = "qwen3-8b"
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)
	learned := persistence.ModelWindow{Endpoint: m.URL(), Model: model, Tokens: 4096,
		Source: "learned from the endpoint's error (vllm)"}
	cacheWindow(t, env.DBPath, learned)
	vars := map[string]string{"HOME": env.Tmp, "OPENAI_BASE_URL": m.URL(), "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp,
		"CROW_MODEL": model, "CROW_CONTEXT_WINDOW": "131072"}
	cli := commandLines(vars)
	m.Enqueue(fakemodel.Reply{Text: "read it all"})
	code, out, errs := cli("exec", "--cwd", env.Dir, longPrompt(5000)) // ~6,500 tokens: over 4096, far under 131072
	if code != exitOK || out != "read it all\n" {
		t.Fatalf("the configured window did not win over the learned one: %d %q %s", code, out, errs)
	}
	_, show, _ := cli("config", "show")
	if !strings.Contains(show, "131072 (configured); the cached 4096 (learned from the endpoint's error (vllm)) is not used: the configured window wins") ||
		!strings.Contains(show, "(env CROW_CONTEXT_WINDOW)") {
		t.Fatalf("config show:\n%s", show)
	}
	// A window= in CROW_MODELS is configured too.
	delete(vars, "CROW_CONTEXT_WINDOW")
	vars["CROW_MODELS"] = model + ";window=65536"
	_, show, _ = cli("config", "show")
	if !strings.Contains(show, "65536 (configured); the cached 4096") || !strings.Contains(show, "(env CROW_MODELS)") {
		t.Fatalf("config show with CROW_MODELS:\n%s", show)
	}
	delete(vars, "CROW_MODELS")
	_, show, _ = cli("config", "show")
	if !strings.Contains(show, "4096 (learned from the endpoint's error (vllm))  (database "+env.DBPath) {
		t.Fatalf("config show without a configured window:\n%s", show)
	}
	// A cached window under the floor (an older version kept it) is not used.
	cacheWindow(t, env.DBPath, persistence.ModelWindow{Endpoint: m.URL(), Model: model, Tokens: 300, Source: "learned from the endpoint's error (vllm)"})
	_, show, _ = cli("config", "show")
	if !strings.Contains(show, "the cached 300 (learned from the endpoint's error (vllm)) is not used: it is under the 512-token floor") {
		t.Fatalf("config show with a poisoned cache:\n%s", show)
	}
	m.Enqueue(fakemodel.Reply{Text: "fine"})
	if code, out, errs := cli("exec", "--cwd", env.Dir, "hello"); code != exitOK || out != "fine\n" {
		t.Fatalf("a cached window under the floor refused the prompt: %d %q %s", code, out, errs)
	}
}
