package framelog

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
)

// A fenced wrapper fences every write: those it makes through the frame log
// and those that reach the embedded store as they are. A fence whose lease
// is not live (here: none was taken) changes nothing.
func TestFencedWrapperFencesEveryWrite(t *testing.T) {
	h := newHarness(t, Options{}, "sess_a")
	ctx := h.ctx
	msg := &persistence.Message{Role: persistence.RoleUser, Content: "a"}
	if err := h.store.AppendMessages(ctx, "sess_a", msg); err != nil {
		t.Fatal(err)
	}
	w := h.j.Store(h.store).WithFence(persistence.Fence{SessionID: "sess_a", Owner: "conn_gone", Generation: 1})
	for _, c := range []struct {
		name  string
		write func() error
	}{
		{"CreateSession", func() error { return w.CreateSession(ctx, &persistence.Session{ID: "sess_b"}) }},
		{"UpdateSession", func() error { return w.UpdateSession(ctx, &persistence.Session{ID: "sess_a", Title: "t"}) }},
		{"SetTokenCounts", func() error { return w.SetTokenCounts(ctx, "sess_a", "o200k", map[int64]int{msg.ID: 3}) }},
		{"SetPermissionRule", func() error { return w.SetPermissionRule(ctx, &persistence.PermissionRule{Cwd: "/tmp", Key: "k"}) }},
		{"AppendMessages", func() error { return w.AppendMessages(ctx, "sess_a", &persistence.Message{Role: persistence.RoleUser}) }},
		{"UpdateMessage", func() error { return w.UpdateMessage(ctx, msg) }},
		{"ForkSession", func() error {
			_, err := w.ForkSession(ctx, "sess_a", &persistence.Session{ID: "fork_a"})
			return err
		}},
		{"DeleteSession", func() error { return w.DeleteSession(ctx, "sess_a") }},
	} {
		if err := c.write(); !errors.Is(err, persistence.ErrLeaseLost) {
			t.Errorf("%s through a stale fence: %v, want ErrLeaseLost", c.name, err)
		}
	}
}

// Every write of the frame log's store that records projection events goes
// through the frame log: the frame of the client request that led to it (a
// prompt's messages, a load's interrupted reply, a compaction and its undo
// through _crow/compaction/expand, collapse and delete), still pending when
// the write runs, is committed in the write's transaction before the
// projection events, and they are recorded as made by the frame log's
// connection whatever the context given (the origin is passed to the store
// explicitly, never carried by a context): a write that reached the store
// without it would leave an event with an empty connection id. Every method
// of persistence.Store must be listed here as recording or not, so a new
// write cannot be left out.
func TestProjectionWritesAreJournaledInOrder(t *testing.T) {
	// The writer never flushes on its own: only a response or a write
	// through the wrapper commits what is pending.
	h := newHarness(t, Options{}, "sess_a")
	ctx, w := h.ctx, h.j.Store(h.store)
	persistencetest.RichSession(t, h.store, "src")
	dump, err := persistence.Dump(ctx, h.store, "src")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.DeleteSession(ctx, "src"); err != nil { // imported again below
		t.Fatal(err)
	}

	msg := &persistence.Message{Role: persistence.RoleAssistant, Content: "a", Status: persistence.StatusStreaming}
	c := &persistence.Compaction{SessionID: "sess_a", Policy: "summarize"}
	// Each write: the session it records in, the client request it follows
	// ("": none on this connection).
	recording := map[string]struct {
		session, request string
		write            func() error
	}{
		"AppendMessages": {"sess_a", "session/prompt", func() error { return w.AppendMessages(ctx, "sess_a", msg) }},
		"UpdateMessage":  {"sess_a", "session/prompt", func() error { msg.Content = "ab"; return w.UpdateMessage(ctx, msg) }},
		"InterruptStreaming": {"sess_a", "session/load", func() error {
			n, err := w.InterruptStreaming(ctx, "sess_a")
			if err == nil && n != 1 {
				err = fmt.Errorf("%d replies interrupted, want 1", n)
			}
			return err
		}},
		"Compact": {"sess_a", "session/prompt", func() error {
			c.CompactedIDs = []int64{msg.ID}
			return w.Compact(ctx, c, []*persistence.Message{{Role: persistence.RoleSummary, Content: "s"}})
		}},
		"ExpandCompaction":   {"sess_a", "_crow/compaction/expand", func() error { return w.ExpandCompaction(ctx, "sess_a", c.ID) }},
		"CollapseCompaction": {"sess_a", "_crow/compaction/collapse", func() error { return w.CollapseCompaction(ctx, "sess_a", c.ID) }},
		"DeleteCompaction":   {"sess_a", "_crow/compaction/delete", func() error { return w.DeleteCompaction(ctx, "sess_a", c.ID) }},
		"ImportSession":      {"src", "", func() error { return w.ImportSession(ctx, dump) }},
		"ForkSession": {"fork_a", "", func() error {
			_, err := w.ForkSession(ctx, "sess_a", &persistence.Session{ID: "fork_a"})
			return err
		}},
	}
	// Methods that record no projection event (reads, the session row, the
	// event log itself, leases, rules, the token-count cache).
	other := map[string]bool{
		"CreateSession": true, "GetSession": true, "UpdateSession": true, "ListSessions": true, "DeleteSession": true,
		"Messages": true, "Compactions": true, "Compaction": true, "SetTokenCounts": true,
		"CreateConnection": true, "AppendEvents": true, "Events": true, "LastTurn": true, "PruneEvents": true,
		"AcquireLease": true, "RenewLeases": true, "ReleaseLease": true, "GetLease": true,
		"SetPermissionRule": true, "PermissionRules": true, "ListPermissionRules": true, "DeletePermissionRules": true,
		"ClearPermissionRules": true, "Close": true, "WithFence": true,
	}
	store := reflect.TypeOf((*persistence.Store)(nil)).Elem()
	for i := range store.NumMethod() {
		name := store.Method(i).Name
		if _, ok := recording[name]; !ok && !other[name] {
			t.Errorf("persistence.Store.%s is new: list it here as recording projection events or not", name)
		}
	}
	order := []string{"AppendMessages", "UpdateMessage", "InterruptStreaming", "Compact", "ExpandCompaction",
		"CollapseCompaction", "DeleteCompaction", "ImportSession", "ForkSession"}
	if len(order) != len(recording) {
		t.Fatalf("order lists %d writes, recording %d", len(order), len(recording))
	}
	for id, name := range order {
		step := recording[name]
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"sessionId":"sess_a"}}`, id, step.request)
		if step.request != "" {
			h.send(acp.Inbound, req)
		}
		before := len(h.events(step.session))
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Read back before the response, which would commit everything.
		reqAt, projections := -1, 0
		for k, e := range h.events(step.session)[before:] {
			for _, f := range eventFrames(t, &e) {
				if string(f) == req {
					reqAt = k
				}
			}
			if e.Kind.IsFrame() || e.Kind == persistence.EventTurnStarted {
				continue
			}
			projections++
			if reqAt < 0 && step.request != "" {
				t.Errorf("%s after %s: %s event (seq %d) committed before the request frame", name, step.request, e.Kind, e.Seq)
			}
			if e.ConnectionID != "conn_1" {
				t.Errorf("%s: %s event (seq %d) recorded with connection %q, want conn_1", name, e.Kind, e.Seq, e.ConnectionID)
			}
		}
		if projections == 0 {
			t.Errorf("%s: no projection event recorded", name)
		}
		if step.request != "" {
			h.send(acp.Outbound, okResult(id))
		}
	}
}
