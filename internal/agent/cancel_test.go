package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// cancelBound is what issue 14 promises: session/cancel is answered within
// one second whatever the turn is doing.
const cancelBound = time.Second

// gate is a blocking point under test: the first caller signals that it
// has arrived and then waits for release, ignoring its context, as a call
// stuck in the kernel, a store lock or an unresponsive client would.
type gate struct {
	armed   bool
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func newGate() *gate {
	return &gate{reached: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) open() {
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

func (g *gate) block() {
	if !g.armed {
		return
	}
	first := false
	g.once.Do(func() { first = true; close(g.reached) })
	if first {
		<-g.release
	}
}

// gatedCounter counts like the estimator once its gate lets it.
type gatedCounter struct{ g *gate }

func (c gatedCounter) Name() string { return compaction.EncodingEstimate }
func (c gatedCounter) Count(text string) int {
	if len(text) > 1000 {
		c.g.block()
	}
	return compaction.Estimator{}.Count(text)
}

// gatedStore blocks the first write of the turn's reply.
type gatedStore struct {
	persistence.Store
	g *gate
}

// WithFence keeps the gate on the fenced view a turn writes through.
func (s *gatedStore) WithFence(f persistence.Fence) persistence.Store {
	return &gatedStore{Store: s.Store.WithFence(f), g: s.g}
}

func (s *gatedStore) AppendMessages(ctx context.Context, id string, msgs ...*persistence.Message) error {
	if len(msgs) == 1 && msgs[0].Role == persistence.RoleAssistant {
		s.g.block()
	}
	return s.Store.AppendMessages(ctx, id, msgs...)
}

// gatedClient never answers a permission request until its gate opens.
type gatedClient struct {
	*recorder
	g *gate
}

func (c *gatedClient) RequestPermission(ctx context.Context, _ *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	c.g.block()
	return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: "cancelled"}}, nil
}

// TestCancelAnsweredWithinOneSecond is the watchdog over every point where a
// turn waits: counting tokens, a running tool, a store write, a permission
// request and a model stream. At each, session/cancel gets its answer
// ("cancelled") within a second, nothing is sent after it, and once the
// stuck call returns the session takes the next prompt.
func TestCancelAnsweredWithinOneSecond(t *testing.T) {
	longPrompt := prose(1, 400)
	for _, c := range []struct {
		name   string
		mode   string
		prompt string
		reply  fakemodel.Reply
		arm    func(g *gate, a *Agent, m *fakemodel.Server)
		// blocked reports that the turn is waiting at the point (nil: the
		// gate was reached).
		blocked func(u acp.SessionUpdate) bool
	}{
		{name: "counting", prompt: longPrompt, reply: fakemodel.Reply{Text: "ok"},
			arm: func(g *gate, a *Agent, _ *fakemodel.Server) {
				a.build.SetCounter(request.Model{Name: "local-7b"}, gatedCounter{g})
			}},
		{name: "tool", mode: ModeBypass, prompt: "sleep",
			reply: fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"sleep 30"}`}}},
			arm:   func(*gate, *Agent, *fakemodel.Server) {},
			blocked: func(u acp.SessionUpdate) bool {
				return u.ToolCallUpdate != nil && u.ToolCallUpdate.Status == acp.ToolStatusInProgress
			}},
		{name: "store", prompt: "hi", reply: fakemodel.Reply{Text: "a reply that is stored"},
			arm: func(g *gate, a *Agent, _ *fakemodel.Server) {
				a.store = &gatedStore{Store: a.store.(persistence.Store), g: g}
			}},
		{name: "permission", prompt: "run it",
			reply: fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"true"}`}}},
			arm: func(g *gate, a *Agent, _ *fakemodel.Server) {
				a.client = &gatedClient{recorder: a.client.(*recorder), g: g}
			}},
		{name: "model stream", prompt: "hi", reply: fakemodel.Reply{Text: "one two three four", StallAfter: 2},
			arm:     func(*gate, *Agent, *fakemodel.Server) {},
			blocked: func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, rec, m := newTestAgent(t, Config{Model: "local-7b", DefaultMode: c.mode}, c.reply)
			m.SetFallback(fakemodel.Reply{Text: "next answer"})
			g := newGate()
			g.armed = true
			c.arm(g, a, m)
			t.Cleanup(g.open)
			ctx := context.Background()
			s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			type answer struct {
				res *acp.PromptResponse
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := a.Prompt(ctx, textPrompt(s.SessionID, c.prompt))
				done <- answer{res, err}
			}()
			if c.blocked == nil {
				select {
				case <-g.reached:
				case <-time.After(hangLimit):
					t.Fatal("the turn never reached the blocking point")
				}
			} else {
				rec.waitFor(t, c.blocked)
			}
			start := time.Now()
			if err := a.Cancel(ctx, &acp.CancelNotification{SessionID: s.SessionID}); err != nil {
				t.Fatal(err)
			}
			select {
			case ans := <-done:
				took := time.Since(start)
				if ans.err != nil || ans.res.StopReason != acp.StopCancelled {
					t.Fatalf("answer %+v, %v; want stopReason cancelled", ans.res, ans.err)
				}
				if took > cancelBound {
					t.Fatalf("cancel answered after %v, want within %v", took, cancelBound)
				}
			case <-time.After(hangLimit):
				t.Fatalf("cancel not answered")
			}
			answered := rec.count()
			g.open()
			// Once the stuck call returns, the turn's work ends silently.
			waitTurnEnded(t, a, s.SessionID)
			if n := rec.count(); n != answered {
				t.Errorf("%d updates sent after the cancelled prompt was answered", n-answered)
			}
			res, err := promptOrHang(t, a, textPrompt(s.SessionID, "again"))
			if err != nil || res.StopReason != acp.StopEndTurn {
				t.Fatalf("next prompt: %+v, %v", res, err)
			}
		})
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates)
}

// waitFor waits until an update satisfying pred has been sent.
func (r *recorder) waitFor(t *testing.T, pred func(acp.SessionUpdate) bool) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, u := range r.updates {
			if pred(u) {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the awaited update never came")
}

// waitTurnEnded waits until the session has no running turn.
func waitTurnEnded(t *testing.T, a *Agent, sessionID string) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		if a.sessions.runningTurn(sessionID) == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the cancelled turn never ended")
}
