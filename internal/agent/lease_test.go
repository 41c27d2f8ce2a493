package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// leaseProc is one agent with its own store on a shared database file, as
// one crow-acp process of two would be.
type leaseProc struct {
	db    string
	a     *Agent
	store *sqlite.Store
	rec   *permissionGate
}

// permissionGate is a client whose permission requests wait until the test
// answers them.
type permissionGate struct {
	recorder
	asked   chan struct{}
	release chan struct{}
}

func (g *permissionGate) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	g.asked <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: "selected", OptionID: optAllowOnce}}, nil
}

// twoProcs starts two agents on one SQLite file and one fake model. Their
// lease TTL is an hour: the heartbeat never runs unless a test calls it.
func twoProcs(t *testing.T) (a, b *leaseProc, m *fakemodel.Server) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "crow.db")
	m = fakemodel.Start()
	t.Cleanup(m.Close)
	start := func() *leaseProc {
		s, err := sqlite.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		g := &permissionGate{asked: make(chan struct{}, 1), release: make(chan struct{})}
		model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
		ag := New(g, s, model, Config{Model: "m", LeaseTTL: time.Hour}, nil)
		t.Cleanup(ag.Close)
		return &leaseProc{db: db, a: ag, store: s, rec: g}
	}
	return start(), start(), m
}

func (p *leaseProc) prompt(t *testing.T, sid, text string) {
	t.Helper()
	res, err := p.a.Prompt(context.Background(), textPrompt(sid, text))
	if err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("prompt %q: %+v, %v", text, res, err)
	}
}

// contents lists a session's stored messages as role:content[status].
func contents(t *testing.T, s Store, sid string) []string {
	t.Helper()
	msgs, err := s.Messages(context.Background(), sid, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		c := string(m.Role) + ":" + m.Content
		if len(m.ToolCalls) > 0 {
			c += "+call"
		}
		out = append(out, c+"["+string(m.Status)+"]")
	}
	return out
}

// expire moves a session's lease past its expiry in the database, as a
// whole TTL without heartbeat would (its holder slept).
func expire(t *testing.T, db, sid string) {
	t.Helper()
	conn, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`UPDATE session_leases SET expires_at = 0 WHERE session_id = ?`, sid); err != nil {
		t.Fatal(err)
	}
}

// Issue 14 case 6: one session open in two processes (two editor windows)
// takes prompts from both in turn, and each process's model context holds
// the other's turns (it is rebuilt from the store).
func TestLeaseTwoProcessesTakeTurns(t *testing.T) {
	ctx := context.Background()
	a, b, m := twoProcs(t)
	sess, err := a.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	m.Enqueue(fakemodel.Reply{Text: "reply one"}, fakemodel.Reply{Text: "reply two"},
		fakemodel.Reply{Text: "reply three"}, fakemodel.Reply{Text: "reply four"})
	a.prompt(t, sid, "prompt one")
	if _, err := b.a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: sid, Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	b.prompt(t, sid, "prompt two") // while a still has the session open
	a.prompt(t, sid, "prompt three")
	b.prompt(t, sid, "prompt four")

	reqs := m.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	for i, want := range [][]string{
		{"prompt one"},
		{"prompt one", "reply one", "prompt two"},
		{"prompt one", "reply one", "prompt two", "reply two", "prompt three"},
		{"prompt three", "reply three", "prompt four"},
	} {
		for _, w := range want {
			if !strings.Contains(string(reqs[i]), w) {
				t.Errorf("model request %d lacks %q: %s", i+1, w, reqs[i])
			}
		}
	}
	got := contents(t, a.store, sid)
	want := []string{"user:prompt one[complete]", "assistant:reply one[complete]", "user:prompt two[complete]", "assistant:reply two[complete]",
		"user:prompt three[complete]", "assistant:reply three[complete]", "user:prompt four[complete]", "assistant:reply four[complete]"}
	if !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	// Between turns nobody holds the session.
	if l, err := a.store.GetLease(ctx, sid); err != nil || l.ExpiresAt.After(time.Now()) {
		t.Errorf("lease after the turns: %+v, %v; want none live", l, err)
	}
}

// Issue 14 case 5: a process paused past its lease's TTL in the middle of a
// tool call (here: waiting for permission) resumes after another process
// took the session over and ran a turn. Its tool result and everything
// after are refused: the call is not separated from its result by the other
// process's turn, and the stale turn ends with a clear error.
func TestLeaseStaleWriterChangesNothing(t *testing.T) {
	ctx := context.Background()
	a, b, m := twoProcs(t)
	cwd := t.TempDir()
	sess, err := a.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	m.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "write_file",
		Arguments: `{"path":"note.txt","content":"hello"}`}}})
	type result struct {
		res *acp.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := a.a.Prompt(ctx, textPrompt(sid, "write a note"))
		done <- result{res, err}
	}()
	select {
	case <-a.rec.asked:
	case r := <-done:
		t.Fatalf("the turn ended before asking permission: %+v, %v", r.res, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no permission request")
	}
	// a sleeps past its TTL; b takes the session and runs a turn.
	expire(t, a.db, sid)
	m.Enqueue(fakemodel.Reply{Text: "b's reply"})
	if _, err := b.a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: sid, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	b.prompt(t, sid, "b's prompt")
	before := contents(t, a.store, sid)

	close(a.rec.release) // a wakes up: the user allows the write
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stale turn did not end")
	}
	var e *acp.Error
	if !errors.As(r.err, &e) || !strings.Contains(e.Message, "lost the session's lock") {
		t.Fatalf("stale turn: %+v, %v; want the lost-lock error", r.res, r.err)
	}
	if got := contents(t, a.store, sid); !slices.Equal(got, before) {
		t.Errorf("the stale writer changed the session:\n got %q\nwant %q", got, before)
	}
	want := []string{"user:write a note[complete]", "assistant:+call[complete]", "user:b's prompt[complete]", "assistant:b's reply[complete]"}
	if !slices.Equal(before, want) {
		t.Errorf("stored %q, want %q", before, want)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2 (the stale turn must not call the model again)", n)
	}
}

// The heartbeat that finds the lease lost aborts the turn at once (here in
// the middle of a stalled model stream) with a clear error; the reply it
// was streaming is left for the next holder to mark interrupted.
func TestLeaseHeartbeatAbortsTurn(t *testing.T) {
	ctx := context.Background()
	a, b, m := twoProcs(t)
	sess, err := a.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	m.Enqueue(fakemodel.Reply{Text: "the start of a long answer", StallAfter: 2})
	done := make(chan error, 1)
	go func() {
		_, err := a.a.Prompt(ctx, textPrompt(sid, "go"))
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	var streamed string // the reply as stored while it streams
	for streamed == "" {
		if got := contents(t, a.store, sid); len(got) == 2 && strings.HasSuffix(got[1], "[streaming]") {
			streamed = strings.TrimSuffix(got[1], "[streaming]")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no streaming reply stored: %q", contents(t, a.store, sid))
		}
		time.Sleep(5 * time.Millisecond)
	}
	expire(t, a.db, sid)
	a.a.leases.renew() // the heartbeat's next tick
	select {
	case err := <-done:
		var e *acp.Error
		if !errors.As(err, &e) || !strings.Contains(e.Message, "lost the session's lock") {
			t.Fatalf("aborted turn: %v; want the lost-lock error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat did not abort the turn")
	}
	want := []string{"user:go[complete]", streamed + "[streaming]"}
	if got := contents(t, a.store, sid); !slices.Equal(got, want) {
		t.Errorf("after the abort: %q, want %q", got, want)
	}
	m.Enqueue(fakemodel.Reply{Text: "fine"})
	b.prompt(t, sid, "next")
	want = []string{"user:go[complete]", streamed + "[interrupted]", "user:next[complete]", "assistant:fine[complete]"}
	if got := contents(t, b.store, sid); !slices.Equal(got, want) {
		t.Errorf("after the next holder's turn: %q, want %q", got, want)
	}
}

// A turn still running when the agent closes (a client gone mid-turn)
// keeps its lease until it has stored what it had: its cancelled reply is
// saved, not refused.
func TestLeaseKeptByTurnAfterClose(t *testing.T) {
	ctx := context.Background()
	a, _, m := twoProcs(t)
	sess, err := a.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	m.Enqueue(fakemodel.Reply{Text: "a reply cut by the exit", StallAfter: 2})
	done := make(chan error, 1)
	go func() {
		_, err := a.a.Prompt(ctx, textPrompt(sid, "go"))
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for got := contents(t, a.store, sid); len(got) < 2; got = contents(t, a.store, sid) {
		if time.Now().After(deadline) {
			t.Fatalf("no streaming reply stored: %q", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.a.Close()
	if err := a.a.Cancel(ctx, &acp.CancelNotification{SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("cancelled turn: %v", err)
	}
	got := contents(t, a.store, sid)
	if len(got) != 2 || !strings.HasSuffix(got[1], "[cancelled]") {
		t.Errorf("after close and cancel: %q, want the reply stored as cancelled", got)
	}
	if l, err := a.store.GetLease(ctx, sid); err != nil || l.Owner != "" {
		t.Errorf("lease after the turn ended: %+v, %v; want it released", l, err)
	}
}

// Issue 29 finding 6: _crow/compaction/delete (and expand, collapse) from
// a second process while the first runs a turn on the session is refused
// with a clear error naming the other process, and changes nothing; once
// the turn ends it succeeds.
func TestLeaseCompactionEditsWaitForOtherProcessTurn(t *testing.T) {
	ctx := context.Background()
	a, b, m := twoProcs(t)
	sess, err := a.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	for i := range 8 { // more than /compact keeps (10 messages) and 3
		m.Enqueue(fakemodel.Reply{Text: prose(i, 30)})
		a.prompt(t, sid, prose(i+10, 30))
	}
	m.Enqueue(fakemodel.Reply{Text: "Task: the steps. Next: none."})
	a.prompt(t, sid, "/compact")
	list, err := a.store.Compactions(ctx, sid)
	if err != nil || len(list) != 1 {
		t.Fatalf("compactions %+v (%v): want one", list, err)
	}
	if _, err := b.a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: sid, Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}

	m.Enqueue(fakemodel.Reply{Text: "a long answer", StallAfter: 1})
	done := make(chan error, 1)
	go func() {
		_, err := a.a.Prompt(ctx, textPrompt(sid, "go on"))
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := contents(t, a.store, sid); strings.HasSuffix(got[len(got)-1], "[streaming]") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the turn in the first process never started streaming")
		}
		time.Sleep(5 * time.Millisecond)
	}
	params, _ := json.Marshal(map[string]any{"sessionId": sid, "compactionId": list[0].ID})
	for _, op := range []string{"expand", "delete"} {
		_, err = b.a.HandleExtMethod(ctx, "_crow/compaction/"+op, params)
		var e *acp.Error
		if !errors.As(err, &e) || e.Code != acp.CodeInvalidRequest || !strings.Contains(e.Message, "another crow-acp process") ||
			!strings.Contains(e.Message, "Cannot "+op+" compaction") {
			t.Fatalf("%s while another process runs a turn: %v; want a clear -32600 naming the other process", op, err)
		}
	}
	if now, err := a.store.Compactions(ctx, sid); err != nil || len(now) != 1 || now[0].Expanded {
		t.Fatalf("compactions after the refused edits: %+v (%v); want the one, unchanged", now, err)
	}
	if err := a.a.Cancel(ctx, &acp.CancelNotification{SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("cancelled turn: %v", err)
	}
	if _, err := b.a.HandleExtMethod(ctx, "_crow/compaction/delete", params); err != nil {
		t.Fatalf("delete once the turn ended: %v", err)
	}
	if now, err := a.store.Compactions(ctx, sid); err != nil || len(now) != 0 {
		t.Fatalf("compactions after the delete: %+v (%v); want none", now, err)
	}
}

// Once the heartbeat finds the lease lost, what the holder still writes
// for the session is refused until it releases the lease: the fence stays
// with the session (Agent.writes), it does not vanish with the lease and
// turn the holder's late writes into unfenced ones.
func TestLeaseFenceOutlivesLoss(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoProcs(t)
	sess, err := a.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	st := a.a.sessions.get(sid)
	lost := make(chan error, 1)
	if err := a.a.leases.hold(ctx, st, func(err error) { lost <- err }); err != nil {
		t.Fatal(err)
	}
	if err := a.a.writes(st).AppendMessages(ctx, sid, &persistence.Message{Role: persistence.RoleUser, Content: "held", Status: persistence.StatusComplete}); err != nil {
		t.Fatalf("a write under the live lease: %v", err)
	}
	expire(t, a.db, sid)
	a.a.leases.renew() // the heartbeat's next tick
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat did not report the lease lost")
	}
	if err := b.a.leases.hold(ctx, b.a.sessions.get(sid), nil); err != nil {
		t.Fatalf("the other process cannot take the expired lease: %v", err)
	}
	defer b.a.leases.release(ctx, b.a.sessions.get(sid))
	err = a.a.writes(st).AppendMessages(ctx, sid, &persistence.Message{Role: persistence.RoleUser, Content: "late", Status: persistence.StatusComplete})
	if !errors.Is(err, persistence.ErrLeaseLost) {
		t.Fatalf("a write after the loss = %v, want ErrLeaseLost", err)
	}
	if got, want := contents(t, a.store, sid), []string{"user:held[complete]"}; !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	a.a.leases.release(ctx, st)
	if st.holdsLease() {
		t.Error("the session still holds its lease after release")
	}
}
