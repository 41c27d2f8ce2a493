package agent

import (
	"context"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// TestReopenWritesOnlyChanges: loading a session in the directory, with the
// MCP servers, it already has writes nothing to its row (no updated_at
// bump, no dead row version on PostgreSQL per load: an editor reopens
// threads often); a load in another directory is stored.
func TestReopenWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newTestAgent(t, Config{Model: "m"})
	cwd := t.TempDir()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	stored := func() (string, int64) {
		t.Helper()
		got, err := a.store.GetSession(ctx, s.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Cwd, got.UpdatedAt.UnixNano()
	}
	_, created := stored()
	for range 3 {
		if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, at := stored(); at != created {
		t.Errorf("loading the session as it was moved updated_at from %d to %d: the row was written", created, at)
	}
	other := t.TempDir()
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: other, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got, at := stored(); got != other || at <= created {
		t.Errorf("a load in %s left cwd %s, updated_at %d (was %d)", other, got, at, created)
	}
}
