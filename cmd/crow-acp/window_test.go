package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestDoctorDiscoversTheWindow: with no window configured, doctor asks the
// endpoint (here vLLM's GET /v1/models max_model_len) and says where the
// window came from; a server that tells nothing is a warning with a fix.
func TestDoctorDiscoversTheWindow(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	m.SetDiscovery(fakemodel.Discovery{Flavor: "vllm", Model: "Qwen/Qwen3-8B", Window: 32768})
	dir := t.TempDir()
	env := map[string]string{"HOME": dir, "OPENAI_BASE_URL": m.URL(), "CROW_MODEL": "Qwen/Qwen3-8B", "CROW_CONFIG": "", "XDG_CONFIG_HOME": dir}
	var out, errOut bytes.Buffer
	run(context.Background(), []string{"doctor"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut}, func(k string) string { return env[k] })
	if !strings.Contains(out.String(), "ok    window     32768 tokens for Qwen/Qwen3-8B (discovered: GET /models (max_model_len))") {
		t.Fatalf("doctor output:\n%s%s", out.String(), errOut.String())
	}
	m.SetDiscovery(fakemodel.Discovery{})
	env["CROW_MODEL"] = fakemodel.ModelID
	out.Reset()
	run(context.Background(), []string{"doctor"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut}, func(k string) string { return env[k] })
	if !strings.Contains(out.String(), "warn  window     no context window configured for fake-model and the endpoint does not tell it") {
		t.Fatalf("doctor output:\n%s", out.String())
	}
}

// TestConfigShowCachedWindow: config show prints the window the agent
// cached from the endpoint, and where it came from, when none is
// configured; a configured one wins.
func TestConfigShowCachedWindow(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "crow.db")
	ctx := context.Background()
	store, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	w := &persistence.ModelWindow{Endpoint: "http://127.0.0.1:8080/v1", Model: "qwen3-8b", Tokens: 16384,
		Source: "discovered: llama.cpp GET /props (default_generation_settings.n_ctx)"}
	if err := store.SetModelWindow(ctx, w); err != nil {
		t.Fatal(err)
	}
	store.Close()
	env := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, "CROW_DB": db, "OPENAI_BASE_URL": w.Endpoint, "CROW_MODEL": "qwen3-8b"}
	show := func() string {
		var out, errOut bytes.Buffer
		run(ctx, []string{"config", "show"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut}, func(k string) string { return env[k] })
		return out.String()
	}
	got := show()
	if !strings.Contains(got, "16384 (discovered: llama.cpp GET /props (default_generation_settings.n_ctx))  (database "+db) {
		t.Fatalf("config show:\n%s", got)
	}
	env["CROW_CONTEXT_WINDOW"] = "8192"
	if got := show(); !strings.Contains(got, "8192 (configured); the cached 16384 (discovered: llama.cpp GET /props (default_generation_settings.n_ctx)) is not used: the configured window wins") ||
		!strings.Contains(got, "(env CROW_CONTEXT_WINDOW)") {
		t.Fatalf("a configured window must win:\n%s", got)
	}
	// Another endpoint's cache is not this one's.
	delete(env, "CROW_CONTEXT_WINDOW")
	env["OPENAI_BASE_URL"] = "http://elsewhere:8080/v1"
	if got := show(); strings.Contains(got, "16384") {
		t.Fatalf("another endpoint's window shown:\n%s", got)
	}
}

// TestWindowCacheRoundTrip: both stores keep a window per endpoint and
// model and replace it.
func TestWindowCacheRoundTrip(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "crow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.ModelWindow(ctx, "e", "m"); err == nil {
		t.Fatal("an empty cache answered")
	}
	for _, n := range []int{4096, 8192} {
		if err := store.SetModelWindow(ctx, &persistence.ModelWindow{Endpoint: "e", Model: "m", Tokens: n, Source: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	if w, err := store.ModelWindow(ctx, "e", "m"); err != nil || w.Tokens != 8192 || w.Source != "s" || w.UpdatedAt.IsZero() {
		t.Fatalf("got %+v, %v", w, err)
	}
}

// windowCLI runs crow-acp in-process with the variables of vars.
func windowCLI(vars map[string]string) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb}, func(k string) string { return vars[k] })
		return code, out.String(), errb.String()
	}
}

// cachedWindowOf reads the window cached in db for endpoint and model.
func cachedWindowOf(t *testing.T, db, endpoint, model string) (persistence.ModelWindow, bool) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w, err := store.ModelWindow(context.Background(), endpoint, model)
	return w, err == nil
}

func cacheWindow(t *testing.T, db string, w persistence.ModelWindow) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.SetModelWindow(context.Background(), &w); err != nil {
		t.Fatal(err)
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
			cli := windowCLI(vars)
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
	cli := windowCLI(vars)
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

// TestForgetWindow: config forget-window deletes the selected model's
// cached window on its endpoint (and only that one); --all deletes every
// one; config show no longer names it.
func TestForgetWindow(t *testing.T) {
	env := fixture.NewEnv(t)
	const endpoint = "http://127.0.0.1:8080/v1"
	for _, w := range []persistence.ModelWindow{
		{Endpoint: endpoint, Model: "qwen3-8b", Tokens: 4096, Source: "learned from the endpoint's error (llama.cpp)"},
		{Endpoint: endpoint, Model: "other", Tokens: 8192, Source: "discovered: GET /models (max_model_len)"},
	} {
		cacheWindow(t, env.DBPath, w)
	}
	vars := map[string]string{"HOME": env.Tmp, "OPENAI_BASE_URL": endpoint, "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp, "CROW_MODEL": "qwen3-8b"}
	cli := windowCLI(vars)
	code, out, errs := cli("config", "forget-window")
	if code != exitOK || out != "forgot the cached context window of qwen3-8b on "+endpoint+": 4096 tokens (learned from the endpoint's error (llama.cpp))\n" {
		t.Fatalf("forget-window: %d %q %s", code, out, errs)
	}
	if _, ok := cachedWindowOf(t, env.DBPath, endpoint, "qwen3-8b"); ok {
		t.Fatal("the window is still cached")
	}
	if _, ok := cachedWindowOf(t, env.DBPath, endpoint, "other"); !ok {
		t.Fatal("another model's window was forgotten too")
	}
	if _, show, _ := cli("config", "show"); strings.Contains(show, "4096") {
		t.Fatalf("config show still names the forgotten window:\n%s", show)
	}
	if _, out, _ := cli("config", "forget-window"); !strings.Contains(out, "no context window is cached for qwen3-8b") {
		t.Fatalf("second forget-window: %q", out)
	}
	if code, out, _ := cli("config", "forget-window", "--all"); code != exitOK || out != "forgot 1 cached context window\n" {
		t.Fatalf("forget-window --all: %d %q", code, out)
	}
}

// TestDoctorFixedPrefixOverWindow: llama.cpp started with -c 512 and the
// tools on cannot take a single request: doctor says so (not all green),
// names the server's context and the tools as the fix, never
// CROW_CONTEXT_WINDOW; a roomy window passes.
func TestDoctorFixedPrefixOverWindow(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	const model = "qwen3-8b"
	env := fixture.NewEnv(t)
	vars := map[string]string{"HOME": env.Tmp, "OPENAI_BASE_URL": m.URL(), "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp, "CROW_MODEL": model}
	cli := windowCLI(vars)
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: model, Window: 512})
	code, out, _ := cli("doctor")
	if code == exitOK || !strings.Contains(out, "FAIL  window     512 tokens for qwen3-8b (discovered: llama.cpp GET /props") ||
		!strings.Contains(out, "restart llama-server with a larger context (-c ") || !strings.Contains(out, "CROW_TOOLS=off") ||
		strings.Contains(out, "raise CROW_CONTEXT_WINDOW") {
		t.Fatalf("doctor at -c 512 with tools (exit %d):\n%s", code, out)
	}
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: model, Window: 32768})
	code, out, _ = cli("doctor")
	if code != exitOK || !strings.Contains(out, "ok    window     32768 tokens for qwen3-8b") {
		t.Fatalf("doctor at -c 32768 (exit %d):\n%s", code, out)
	}
}
