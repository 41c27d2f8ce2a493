package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/fixture"
)

func notesServer(t *testing.T) acp.McpServer {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the test MCP server")
	}
	return acp.McpServer{Name: "notes", Command: fixture.BuildBinary(t, "github.com/crow-acp/crow-acp/testdata/mcpserver")}
}

// withLimits sets the process's MCP limits for one test.
func withLimits(t *testing.T, l MCPLimits) {
	SetMCPLimits(l)
	t.Cleanup(func() { SetMCPLimits(MCPLimits{}) })
}

// children counts this process's child processes (Linux).
func children(t *testing.T) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Skip("no /proc/self/task/*/children here")
	}
	n := 0
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		n += len(strings.Fields(string(b)))
	}
	return n
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(fds)
}

// eventually waits (bounded) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func connectNotes(t *testing.T, srv acp.McpServer) *MCPSet {
	t.Helper()
	set := ConnectMCP([]acp.McpServer{srv}, MCPOptions{Version: "test", Timeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set.Wait(ctx)
	if f := set.TakeFailures(); len(f) > 0 {
		t.Fatalf("connect: %v", f)
	}
	return set
}

// echo calls the server's echo tool through the set.
func echo(t *testing.T, set *MCPSet, text string) string {
	t.Helper()
	for _, tl := range set.Tools() {
		if tl.Definition().Name != "notes__echo" {
			continue
		}
		args, _ := json.Marshal(map[string]string{"text": text})
		act, err := tl.Prepare(&Env{OutputLimit: 1 << 10}, args)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r := act.Run(ctx, func([]acp.ToolCallContent) {})
		if r.Failed {
			t.Fatalf("echo failed: %s", r.Output)
		}
		return r.Output
	}
	t.Fatalf("no notes__echo among %d tools", len(set.Tools()))
	return ""
}

// Issue 14 case 8: many sessions with a stdio MCP server each do not keep a
// process (and its pipes) per session: at most MaxLive run, the least
// recently used idle one stops for the next, and a stopped one starts again
// transparently when its tool is called.
func TestMCPServersCapped(t *testing.T) {
	srv := notesServer(t)
	const maxLive, sessions = 3, 12
	withLimits(t, MCPLimits{IdleTimeout: time.Hour, MaxLive: maxLive})
	kids, fds := children(t), openFDs(t)
	var sets []*MCPSet
	t.Cleanup(func() {
		for _, s := range sets {
			s.Close()
		}
	})
	for range sessions {
		sets = append(sets, connectNotes(t, srv))
		if n := LiveMCPServers(); n > maxLive {
			t.Fatalf("%d servers live after %d sessions, cap %d", n, len(sets), maxLive)
		}
	}
	// Stopped servers are reaped when their session is closed (the SDK
	// waits for the process), so processes never exceed the cap.
	eventually(t, "processes within the cap", func() bool { return children(t)-kids <= maxLive })
	if grown := openFDs(t) - fds; grown > maxLive*6 {
		t.Errorf("%d more open files after %d sessions (cap %d servers)", grown, sessions, maxLive)
	}
	// The first session's server was stopped to make room: it starts again.
	if got := echo(t, sets[0], "again"); got != "echo: again" {
		t.Errorf("echo on a restarted server = %q", got)
	}
	if n := LiveMCPServers(); n > maxLive {
		t.Errorf("%d servers live after the restart, cap %d", n, maxLive)
	}
	for _, s := range sets {
		s.Close()
	}
	sets = nil
	if n := LiveMCPServers(); n != 0 {
		t.Errorf("%d servers live after every session closed", n)
	}
	eventually(t, "no server process left", func() bool { return children(t) == kids })
}

// Issue 14 case 8: a stdio server idle for IdleTimeout stops (its process
// exits), and the next call of its tool starts it again transparently.
func TestMCPIdleServerRestarts(t *testing.T) {
	srv := notesServer(t)
	withLimits(t, MCPLimits{IdleTimeout: 50 * time.Millisecond})
	kids := children(t)
	set := connectNotes(t, srv)
	t.Cleanup(set.Close)
	if got := echo(t, set, "one"); got != "echo: one" {
		t.Fatalf("echo = %q", got)
	}
	eventually(t, "the idle server stopped", func() bool { return LiveMCPServers() == 0 && children(t) == kids })
	if got := echo(t, set, "two"); got != "echo: two" {
		t.Errorf("echo after the idle stop = %q", got)
	}
	if n := LiveMCPServers(); n != 1 {
		t.Errorf("%d servers live after the call, want 1", n)
	}
	set.Close()
	eventually(t, "the closed session's server stopped", func() bool { return LiveMCPServers() == 0 && children(t) == kids })
}
