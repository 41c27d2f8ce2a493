package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
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

// leaseCounter counts the leases taken through it.
type leaseCounter struct {
	persistence.Store
	taken atomic.Int32
}

func (s *leaseCounter) AcquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	s.taken.Add(1)
	return s.Store.AcquireLease(ctx, l, ttl, replace)
}

// TestLoadTakesNoLeaseAfterCleanRelease: a session whose last turn released
// its lease has nothing to repair, so loading it takes no lease; a lease
// left held by a process that is gone is taken over at load, and the reply
// it left streaming is marked interrupted.
func TestLoadTakesNoLeaseAfterCleanRelease(t *testing.T) {
	ctx := context.Background()
	store := &leaseCounter{Store: newTestStore(t)}
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "done"})
	a := New(&recorder{}, store, provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL()}), Config{Model: "m"}, nil)
	t.Cleanup(a.Close)
	cwd := t.TempDir()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}); err != nil {
		t.Fatal(err)
	}
	before := store.taken.Load()
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if n := store.taken.Load() - before; n != 0 {
		t.Errorf("loading a session whose lease was released took %d leases", n)
	}

	// A dead process's lease and the reply it left streaming.
	dead := &persistence.Lease{SessionID: s.SessionID, Owner: "gone", PID: 1 << 22, Host: "elsewhere"}
	// Its TTL is long enough for the append under it on a busy machine (1 ms
	// was not, under a parallel test run) and short enough to wait out.
	const deadTTL = 200 * time.Millisecond
	if err := store.Store.AcquireLease(ctx, dead, deadTTL, ""); err != nil {
		t.Fatal(err)
	}
	cut := &persistence.Message{Role: persistence.RoleAssistant, Content: "half a rep", Status: persistence.StatusStreaming}
	if err := store.Store.WithFence(dead.Fence()).AppendMessages(ctx, s.SessionID, cut); err != nil {
		t.Fatal(err)
	}
	time.Sleep(deadTTL + 50*time.Millisecond) // the dead lease expires
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	msgs, err := store.Messages(ctx, s.SessionID, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1]; last.Content != "half a rep" || last.Status != persistence.StatusInterrupted {
		t.Errorf("after the load the cut reply is %q [%s], want it kept and interrupted", last.Content, last.Status)
	}
}
