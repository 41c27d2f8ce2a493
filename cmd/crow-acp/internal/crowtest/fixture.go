package crowtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// FixtureModel starts a fake model server loaded with the fixture's
// replies. Every scenario runs against a strict chat template (llama.cpp
// with Mistral's or Gemma's Jinja): a request with two user or two
// assistant messages in a row is refused, as those servers do.
func FixtureModel(t testing.TB, f *fixture.Fixture) *fakemodel.Server {
	t.Helper()
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetRules(fakemodel.StrictAlternation)
	replies, err := fakemodel.ParseScript(bytes.NewReader(f.Model))
	if err != nil {
		t.Fatalf("%s: model section: %v", f.Name, err)
	}
	m.Enqueue(replies...)
	return m
}

// FixtureEnv is the environment the agent runs with in a fixture: the
// common part, then the fixture's -- env -- section. A fixture whose
// script names ${TMP}/mcp-notes finds the test MCP server there.
func FixtureEnv(t testing.TB, f *fixture.Fixture, env fixture.Env) map[string]string {
	t.Helper()
	vars := map[string]string{
		"OPENAI_BASE_URL": env.ModelURL,
		"OPENAI_API_KEY":  "sk-fixture-secret",
		"CROW_MODEL":      "fixture-model",
		// Two models: a priced text model (the default) and a vision model.
		"CROW_MODELS":         "fixture-model;window=8192;in=1;out=2, fixture-vision;window=32768;image;title=Fixture Vision",
		"CROW_LIST_PAGE_SIZE": "2",
		// The prompt response's usage (ACP unstable) counts the fake
		// model's estimated tokens, which move with every change to the
		// system prompt: only the fixtures about it turn it on.
		"CROW_PROMPT_USAGE": "off",
		"CROW_DB":           env.DBPath,
		"CROW_LOG_LEVEL":    "debug",
		// Retries of failed model requests wait 1-2ms, not seconds.
		"CROW_MODEL_RETRY_DELAY": "1ms",
		// No developer's config.toml may reach a test.
		"XDG_CONFIG_HOME": env.Tmp,
	}
	dirs := strings.NewReplacer("${CWD}", env.Dir, "${TMP}", env.Tmp)
	for k, v := range f.Env {
		vars[k] = dirs.Replace(v)
	}
	linkMCPServer(t, f, env)
	return vars
}

// mcpServerName is where a fixture finds the test MCP server
// (testdata/mcpserver): "${TMP}/mcp-notes".
const mcpServerName = "mcp-notes"

// linkMCPServer links the test MCP server into ${TMP} for the fixtures
// that use it.
func linkMCPServer(t testing.TB, f *fixture.Fixture, env fixture.Env) {
	t.Helper()
	script := ""
	for _, st := range f.Script {
		script += st.Text
	}
	if !strings.Contains(script, "${TMP}/"+mcpServerName) {
		return
	}
	if err := os.Symlink(MCPServer(t), filepath.Join(env.Tmp, mcpServerName)); err != nil {
		t.Fatal(err)
	}
}
