package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// TestMCPKeys: [mcp] idle_timeout and max_servers have defaults, come from
// the file (shown with their line) or the environment (which wins), reach
// the MCP limits, and a bad value is a usage error naming the line or the
// variable.
func TestMCPKeys(t *testing.T) {
	dir := t.TempDir()
	load := func(t *testing.T, doc string, env map[string]string) (*Settings, string, error) {
		return loadTestConfigIn(t, dir, doc, env)
	}
	show := func(cfg *Settings) map[string]Row {
		out := map[string]Row{}
		for _, r := range cfg.Rows() {
			out[r.Key] = r
		}
		return out
	}

	cfg, _, err := load(t, "model = \"m\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := show(cfg)
	if r := rows["mcp.idle_timeout"]; r.Value != "5m0s" || r.From.String() != "default" {
		t.Errorf("default idle_timeout Row %+v", r)
	}
	if r := rows["mcp.max_servers"]; r.Value != "16" || r.From.String() != "default" {
		t.Errorf("default max_servers Row %+v", r)
	}
	if l := cfg.MCPLimits(); l != (tool.MCPLimits{IdleTimeout: tool.DefaultMCPIdleTimeout, MaxLive: tool.DefaultMCPMaxLive}) {
		t.Errorf("default limits %+v", l)
	}

	doc := "model = \"m\"\n[mcp]\nidle_timeout = \"90s\"\nmax_servers = 4\n"
	cfg, file, err := load(t, doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows = show(cfg)
	if r := rows["mcp.idle_timeout"]; r.Value != "1m30s" || r.From.String() != "file "+file+":3" {
		t.Errorf("file idle_timeout Row %+v", r)
	}
	if r := rows["mcp.max_servers"]; r.Value != "4" || r.From.String() != "file "+file+":4" {
		t.Errorf("file max_servers Row %+v", r)
	}
	if l := cfg.MCPLimits(); l != (tool.MCPLimits{IdleTimeout: 90 * time.Second, MaxLive: 4}) {
		t.Errorf("file limits %+v", l)
	}

	cfg, _, err = load(t, doc, map[string]string{"CROW_MCP_IDLE_TIMEOUT": "10m", "CROW_MCP_MAX_SERVERS": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.MCPLimits(); l != (tool.MCPLimits{IdleTimeout: 10 * time.Minute, MaxLive: 2}) {
		t.Errorf("env limits %+v", l)
	}

	var ue *Error
	for _, c := range []struct {
		doc  string
		env  map[string]string
		want string
	}{
		{"[mcp]\nidle_timeout = \"soon\"\n", nil, ":2: mcp.idle_timeout: \"soon\" is not a duration"},
		{"[mcp]\nidle_timeout = \"10ms\"\n", nil, ":2: mcp.idle_timeout: 10ms is too short: at least 1s"},
		{"[mcp]\nmax_servers = 0\n", nil, ":2: mcp.max_servers: 0 is out of range: at least 1"},
		{"", map[string]string{"CROW_MCP_MAX_SERVERS": "0"}, "mcp.max_servers: 0 is out of range: at least 1 (from env CROW_MCP_MAX_SERVERS)"},
		{"", map[string]string{"CROW_MCP_IDLE_TIMEOUT": "0s"}, "mcp.idle_timeout: 0s is too short: at least 1s (from env CROW_MCP_IDLE_TIMEOUT)"},
	} {
		_, _, err := load(t, c.doc, c.env)
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v: got %v, want a usage error containing %q", c.doc, c.env, err, c.want)
		}
	}
}
