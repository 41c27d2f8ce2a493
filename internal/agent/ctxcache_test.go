package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// checkView compares the session's kept view, brought up to date under its
// lease as a turn does, with the active messages read afresh and counted.
func checkView(t *testing.T, a *Agent, sid, when string) {
	t.Helper()
	ctx := context.Background()
	if err := a.leases.hold(ctx, a.sessions.get(sid), nil); err != nil {
		t.Fatal(err)
	}
	defer a.leases.release(ctx, a.sessions.get(sid))
	c := a.build.CounterFor(a.sessionModel(mustSession(t, a, sid)))
	got, err := a.build.ActiveView(ctx, &a.sessions.get(sid).req, c)
	if err != nil {
		t.Fatal(err)
	}
	want, err := a.store.Messages(ctx, sid, persistence.MessageFilter{ActiveOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := request.CountView(ctx, c, want); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: the kept view has %d messages, the store %d", when, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		g.CreatedAt = w.CreatedAt
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: message %d of the kept view\n %+v\nthe store has\n %+v", when, i, g, w)
		}
	}
}

// The kept context of a session is what the store holds after everything
// that changes it: turns, an edit in place, another process's turn and
// edit under its own lease, a compaction and its expand, collapse and
// delete.
func TestKeptContextFollowsTheStore(t *testing.T) {
	ctx := context.Background()
	a, b, m := twoProcs(t)
	m.SetFallback(fakemodel.Reply{Text: "Done: " + prose(1, 60)})
	sess, err := a.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	for i := range 6 {
		a.prompt(t, sid, fmt.Sprintf("step %d: %s", i, prose(i, 80)))
		checkView(t, a.a, sid, fmt.Sprintf("after turn %d", i))
	}

	edit := func(p *leaseProc, what string) {
		t.Helper()
		if err := p.a.leases.hold(ctx, p.a.sessions.get(sid), nil); err != nil {
			t.Fatal(err)
		}
		defer p.a.leases.release(ctx, p.a.sessions.get(sid))
		msgs, err := p.a.store.Messages(ctx, sid, persistence.MessageFilter{ActiveOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		old := msgs[1] // an early reply, long read into the kept view
		old.Content = what
		if err := p.a.sessions.get(sid).req.UpdateMessage(ctx, p.a.writes(p.a.sessions.get(sid)), &old); err != nil {
			t.Fatal(err)
		}
	}
	edit(a, "edited here")
	checkView(t, a.a, sid, "after an edit in this process")

	if _, err := b.a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: sid, Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	b.prompt(t, sid, "a turn in the other process")
	edit(b, "edited by the other process")
	checkView(t, a.a, sid, "after another process's turn and edit")
	a.prompt(t, sid, "back here")
	checkView(t, a.a, sid, "after the next turn here")

	m.Enqueue(fakemodel.Reply{Text: "Task: the steps. Next: none."})
	a.prompt(t, sid, "/compact")
	list, err := a.store.Compactions(ctx, sid)
	if err != nil || len(list) != 1 {
		t.Fatalf("compactions %+v (%v): want one", list, err)
	}
	checkView(t, a.a, sid, "after /compact")
	for _, op := range []string{"expand", "collapse", "delete"} {
		params, _ := json.Marshal(map[string]any{"sessionId": sid, "compactionId": list[0].ID})
		if _, err := a.a.HandleExtMethod(ctx, "_crow/compaction/"+op, params); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		checkView(t, a.a, sid, "after "+op)
	}
}

// viewReads counts the messages the agent reads for model contexts.
type viewReads struct {
	Store
	mu   sync.Mutex
	read int
}

func (r *viewReads) Messages(ctx context.Context, sid string, f persistence.MessageFilter) ([]persistence.Message, error) {
	msgs, err := r.Store.Messages(ctx, sid, f)
	if f.ActiveOnly {
		r.mu.Lock()
		r.read += len(msgs)
		r.mu.Unlock()
	}
	return msgs, err
}

// Issue 19 item 4: a turn reads from the store only the messages stored
// since the last request, not the whole history again.
func TestTurnReadsOnlyNewMessages(t *testing.T) {
	store := &viewReads{Store: newTestStore(t)}
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	a := New(&recorder{}, store, provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"}), Config{Model: "m", NoTools: true}, nil)
	t.Cleanup(a.Close)
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		store.mu.Lock()
		store.read = 0
		store.mu.Unlock()
		if _, err := prompt(a, s.SessionID, fmt.Sprint("turn ", i)); err != nil {
			t.Fatal(err)
		}
		store.mu.Lock()
		read := store.read
		store.mu.Unlock()
		// The new prompt, and from the second turn the last reply.
		if want := min(i+1, 2); read != want {
			t.Fatalf("turn %d read %d messages for its context, want the %d new ones", i, read, want)
		}
	}
}

// The history goes to each model as that model wants it, through the kept
// encoding too: tool-call ids in Mistral's form after a switch to a Mistral
// model, as they were after the switch back.
func TestKeptContextFollowsModelSwitch(t *testing.T) {
	const callID = "call_0123456789abcdef"
	ctx := context.Background()
	a, _, m := newTestAgent(t, Config{Model: "gpt-4o-mini", Models: []request.Model{{Name: "gpt-4o-mini"}, {Name: "mistral-large-latest"}}, DefaultMode: ModeBypass},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: callID, Name: "list_files", Arguments: `{"path":"."}`}}},
		fakemodel.Reply{Text: "listed"})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "list the files"); err != nil {
		t.Fatal(err)
	}
	last := func() string { r := m.Requests(); return string(r[len(r)-1]) }
	mistral := provider.MistralToolCallID(callID)
	for _, step := range []struct{ model, want, not string }{
		{"gpt-4o-mini", callID, mistral},
		{"mistral-large-latest", mistral, callID},
		{"gpt-4o-mini", callID, mistral},
	} {
		if _, err := a.SetSessionConfigOption(ctx, &acp.SetSessionConfigOptionRequest{SessionID: s.SessionID, ConfigID: "model", Value: json.RawMessage(`"` + step.model + `"`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := prompt(a, s.SessionID, "again"); err != nil {
			t.Fatal(err)
		}
		if body := last(); !strings.Contains(body, `"`+step.want+`"`) || strings.Contains(body, `"`+step.not+`"`) {
			t.Fatalf("with %s the request should carry the call id %s, not %s: %s", step.model, step.want, step.not, body)
		}
		checkView(t, a, s.SessionID, "with "+step.model)
	}
}

// promptCounter counts how often the system prompt is counted.
type promptCounter struct {
	mu *sync.Mutex
	n  *int
}

func (c promptCounter) Name() string { return compaction.EncodingEstimate }
func (c promptCounter) Count(text string) int {
	if strings.HasPrefix(text, "You are crow") {
		c.mu.Lock()
		*c.n++
		c.mu.Unlock()
	}
	return compaction.Estimator{}.Count(text)
}

// Issue 19 item 4: the fixed prefix (system prompt and tool schemas) is
// counted once per model and tool set, not for every request.
func TestFixedPrefixCountedOnce(t *testing.T) {
	a, _, m := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: 1 << 20}}})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	var mu sync.Mutex
	var counted int
	a.build.SetCounter(request.Model{Name: "m"}, promptCounter{&mu, &counted})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := prompt(a, s.SessionID, fmt.Sprint("turn ", i)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if counted != 1 {
		t.Fatalf("the system prompt was counted %d times in 5 turns, want once", counted)
	}
}

// A load's read seeds the kept context only when nothing this process
// does since its ticket could have made the read stale: a lease taken
// here, a change in place, a dropped view; and never without an earlier
// lease here (a gap in generations could not be seen) or while this
// process's turn holds the lease.
func TestSeedRefusedAfterChanges(t *testing.T) {
	view := []persistence.Message{{ID: 1, Seq: 1, IsActive: true}, {ID: 2, Seq: 2, IsActive: true}}
	for _, tc := range []struct {
		name    string
		gen     int64
		held    bool
		between func(cc *request.ContextCache)
		want    bool
	}{
		{"nothing between", 3, false, func(*request.ContextCache) {}, true},
		{"no lease before", 0, false, func(*request.ContextCache) {}, false},
		{"a turn here holds the lease", 3, true, func(*request.ContextCache) {}, false},
		{"a lease here", 3, false, func(cc *request.ContextCache) { cc.Leased(4) }, false},
		{"a change in place", 3, false, func(cc *request.ContextCache) { cc.Changed(7) }, false},
		{"a dropped view", 3, false, func(cc *request.ContextCache) { cc.Reset() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cc request.ContextCache
			if tc.gen != 0 {
				cc.Leased(tc.gen)
			}
			ticket := cc.Ticket(tc.held)
			tc.between(&cc)
			ticket.Seed(view, "", nil)
			if cc.Valid != tc.want {
				t.Fatalf("seeded %v, want %v", cc.Valid, tc.want)
			}
			if tc.want && cc.Last != 2 {
				t.Fatalf("the seeded view ends at seq %d, want 2", cc.Last)
			}
		})
	}
}

// A load that found the session's lease released takes none: the
// generation it saw is where a later lease here looks for a gap. The kept
// view stays only if that released lease was this process's own; after
// it, the next generation here keeps the view and any other drops it.
func TestReleasedLeaseSeen(t *testing.T) {
	view := []persistence.Message{{ID: 1, Seq: 1, IsActive: true}}
	kept := func(own, seen int64, then func(cc *request.ContextCache)) bool {
		var cc request.ContextCache
		if own != 0 {
			cc.Leased(own)
		}
		cc.Ticket(false).Seed(view, "", nil)
		cc.Released(seen)
		if then != nil {
			then(&cc)
		}
		return cc.Valid
	}
	if !kept(5, 5, nil) {
		t.Error("this process's own released lease dropped the view")
	}
	if kept(5, 6, nil) {
		t.Error("another process's released lease (6 after 5) kept the view")
	}
	var cc request.ContextCache
	cc.Released(6)
	cc.Ticket(false).Seed(view, "", nil)
	if !cc.Valid {
		t.Fatal("a load after a released lease could not seed")
	}
	if cc.Leased(7); !cc.Valid {
		t.Error("the next lease (7 after the released 6) dropped the view")
	}
	if cc.Leased(9); cc.Valid {
		t.Error("a gap (9 after 7) kept the view")
	}
	cc = request.ContextCache{}
	cc.Released(0) // never leased
	if !cc.Ticket(false).Ok {
		t.Error("a session never leased could not seed")
	}
}
