// Package crowtest holds what the tests of crow-acp share, whether they run
// it in process (cmd/crow-acp) or as the built binary (cmd/crow-acp/e2e):
// the environment an agent runs with, the scripted fake model and the
// environment of a fixture, an ACP client that watches what the agent
// writes, the test MCP server, and reading what a run left in the store.
package crowtest

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
)

// SessionID matches a session id as crow-acp makes them (exec prints the
// session it used on stderr).
var SessionID = regexp.MustCompile(`sess_[0-9a-f]{32}`)

// Environ is vars as KEY=value entries, for a process.
func Environ(vars map[string]string) []string {
	var out []string
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// MCPServer is the path of the test MCP server (testdata/mcpserver), built
// once for the test binary (fixture.BuildBinary: TestMain calls
// fixture.Main).
func MCPServer(t testing.TB) string {
	t.Helper()
	return fixture.BuildBinary(t, "github.com/crow-acp/crow-acp/testdata/mcpserver")
}

// SystemPrompt is the system message of a model request.
func SystemPrompt(t testing.TB, body []byte) string {
	t.Helper()
	var req struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 || req.Messages[0].Role != "system" {
		t.Fatalf("a request without a system prompt (%v): %s", err, body)
	}
	return req.Messages[0].Content
}
