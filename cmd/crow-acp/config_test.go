package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// config show and forget-window in process, and the window cache they
// read.

// TestConfigShowMasksDatabasePassword: `config show` names the PostgreSQL
// server but not the password.
func TestConfigShowMasksDatabasePassword(t *testing.T) {
	env := map[string]string{"CROW_DB": "postgres://crow:hunter2@db.example:5432/crow", "HOME": t.TempDir()}
	code, out, stderr := commandLines(env)("config", "show")
	if code != exitOK {
		t.Fatalf("config show: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "postgres://crow:xxxxx@db.example:5432/crow") {
		t.Errorf("config show:\n%s\nwant the URL with its password masked", out)
	}
}

// Issue 13 case 6: config show and doctor never print a password in the
// base URL's userinfo, the value of a header named like X-Auth, or the
// password of a libpq keyword DSN.
func TestConfigShowAndDoctorHideSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An endpoint that echoes what it was sent.
		http.Error(w, "no such model list; you sent "+r.Header.Get("X-Auth")+" "+r.URL.String(), http.StatusBadGateway)
	}))
	defer srv.Close()
	const urlPW, hdr, dbPW = "urlpass-4242", "xauth-value-5353", "dbpass-6464"
	dir := t.TempDir()
	base := strings.Replace(srv.URL, "http://", "http://me:"+urlPW+"@", 1) + "/v1"
	doc := fmt.Sprintf("model = \"m\"\n[providers.p]\nbase_url = %q\nheaders = { X-Auth = %q }\n", base, hdr)
	file := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": dir, "CROW_CONFIG": file,
		"CROW_DB": "host=127.0.0.1 port=1 dbname=crow password=" + dbPW + " connect_timeout=1"}
	for _, args := range [][]string{{"config", "show"}, {"doctor", "--timeout", "2s"}} {
		_, s := both(commandLines(vars)(args...))
		for _, secret := range []string{urlPW, hdr, dbPW} {
			if strings.Contains(s, secret) {
				t.Errorf("%v prints %s:\n%s", args, secret, s)
			}
		}
		if !strings.Contains(s, "127.0.0.1") {
			t.Errorf("%v: the output names nothing, the check proves nothing:\n%s", args, s)
		}
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
		_, out, _ := commandLines(env)("config", "show")
		return out
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
	cli := commandLines(vars)
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
