package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// sessionCount is how many sessions this process keeps state for.
func (a *Agent) sessionCount() int {
	a.sessions.mu.Lock()
	defer a.sessions.mu.Unlock()
	return len(a.sessions.m)
}

// Issue 17 item 5: closing or deleting a session drops everything the agent
// kept for it (the compaction budget of each prompted session used to stay
// forever).
func TestClosedSessionsLeaveNoState(t *testing.T) {
	ctx := context.Background()
	const n = 6
	a, _, m := newTestAgent(t, Config{Model: "m", NoTools: true})
	var ids []string
	for i := range n {
		s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		m.Enqueue(fakemodel.Reply{Text: "ok"})
		if _, err := prompt(a, s.SessionID, fmt.Sprint("hello ", i)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.SessionID)
	}
	if got := a.sessionCount(); got != n {
		t.Fatalf("%d sessions with state after %d prompts, want %d", got, n, n)
	}
	for i, id := range ids {
		var err error
		if i%2 == 0 {
			_, err = a.CloseSession(ctx, &acp.CloseSessionRequest{SessionID: id})
		} else {
			_, err = a.DeleteSession(ctx, &acp.DeleteSessionRequest{SessionID: id})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := a.sessionCount(); got != 0 {
		t.Fatalf("the agent still keeps state for %d of %d closed or deleted sessions", got, n)
	}
}

// Issue 17 item 5: an MCP server replaced when a session is opened again is
// closed by the session, so session/close returns only once every server
// of the session has exited (it used to be closed by a goroutine nobody
// waited for).
func TestCloseSessionWaitsForItsMCPServers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the test MCP server")
	}
	bin := fixture.BuildBinary(t, "github.com/crow-acp/crow-acp/testdata/mcpserver")
	ctx := context.Background()
	a, _, _ := newTestAgent(t, Config{Model: "m", MCPConnectTimeout: 30 * time.Second})
	t.Cleanup(a.Close)
	cwd := t.TempDir()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{{Name: "notes", Command: bin}}})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a.sessions.get(s.SessionID).mcpServers().Wait(waitCtx)
	if got := processesOf(t, bin); got != 1 {
		t.Fatalf("%d MCP server processes after connecting, want 1", got)
	}
	// Reopened without servers: the old set is closed in the background.
	if _, err := a.ResumeSession(ctx, &acp.ResumeSessionRequest{SessionID: s.SessionID, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CloseSession(ctx, &acp.CloseSessionRequest{SessionID: s.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got := processesOf(t, bin); got != 0 {
		t.Fatalf("session/close returned while %d of its MCP server processes still ran", got)
	}
}

// processesOf counts this process's children running bin (Linux).
func processesOf(t *testing.T, bin string) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Skip("no /proc/self/task/*/children here")
	}
	n := 0
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if name, _, _ := strings.Cut(string(cmd), "\x00"); name == bin {
				n++
			}
		}
	}
	return n
}
