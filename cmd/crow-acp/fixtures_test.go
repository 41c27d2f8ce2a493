package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

const fixtureDir = "../../testdata/fixtures"

// startModel starts a fake model server loaded with the fixture's replies.
// Every scenario runs against a strict chat template (llama.cpp with
// Mistral's or Gemma's Jinja): a request with two user or two assistant
// messages in a row is refused, as those servers do.
func startModel(t *testing.T, f *fixture.Fixture) *fakemodel.Server {
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

// fixtureEnv is the environment the agent runs with in a fixture: the
// common part, then the fixture's -- env -- section.
func fixtureEnv(f *fixture.Fixture, env fixture.Env) map[string]string {
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
	buildMCPServer(f, env)
	return vars
}

// mcpServerName is where a fixture finds the test MCP server
// (testdata/mcpserver): "${TMP}/mcp-notes".
const mcpServerName = "mcp-notes"

// buildMCPServer builds the test MCP server into ${TMP} for the fixtures
// that use it. A build failure shows up as the server failing to start.
func buildMCPServer(f *fixture.Fixture, env fixture.Env) {
	script := ""
	for _, st := range f.Script {
		script += st.Text
	}
	out := filepath.Join(env.Tmp, mcpServerName)
	if !strings.Contains(script, "${TMP}/"+mcpServerName) {
		return
	}
	if _, err := os.Stat(out); err == nil {
		return
	}
	_ = exec.Command("go", "build", "-o", out, "github.com/crow-acp/crow-acp/testdata/mcpserver").Run()
}

// pipeAgent runs crow-acp in-process over pipes with the fixture's
// environment.
func pipeAgent(f *fixture.Fixture) fixture.Starter {
	return fixture.PipeAgent(func(ctx context.Context, env fixture.Env, in io.Reader, out io.Writer) error {
		vars := fixtureEnv(f, env)
		code := run(ctx, nil, stdio{in: in, out: out, err: io.Discard}, func(k string) string { return vars[k] })
		if code != exitOK {
			return fmt.Errorf("crow-acp exited with code %d", code)
		}
		return nil
	})
}

// environ is vars as KEY=value entries, for a process.
func environ(vars map[string]string) []string {
	var out []string
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// TestFixtures runs every scenario in-process, over pipes.
func TestFixtures(t *testing.T) {
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := startModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		start := pipeAgent(f)
		return env, start, m
	})
}

// TestFixturesBinary runs every scenario against the built binary over real
// stdio, the way editors run it.
func TestFixturesBinary(t *testing.T) {
	bin := testBinary(t)
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := startModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		return env, fixture.ProcessAgent(bin, nil, environ(fixtureEnv(f, env))), m
	})
}
