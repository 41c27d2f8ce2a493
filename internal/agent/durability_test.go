package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// faultStore is a real store whose writes start failing like a full disk or
// a read-only database once armed: after `after` more successful writes.
type faultStore struct {
	persistence.Store
	*faults // shared by the fenced views of the store
}

type faults struct {
	mu    sync.Mutex
	fault error // nil: healthy
	after int
}

// WithFence keeps the faults on the fenced view a turn writes through.
func (f *faultStore) WithFence(fc persistence.Fence) persistence.Store {
	return &faultStore{Store: f.Store.WithFence(fc), faults: f.faults}
}

func (f *faultStore) arm(fault error, after int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.after = fault, after
}

func (f *faultStore) check(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fault == nil {
		return nil
	}
	if f.after > 0 {
		f.after--
		return nil
	}
	return fmt.Errorf("sqlite: %s: %w", op, f.fault)
}

func (f *faultStore) AppendMessages(ctx context.Context, id string, msgs ...*persistence.Message) error {
	if err := f.check("append messages"); err != nil {
		return err
	}
	return f.Store.AppendMessages(ctx, id, msgs...)
}

func (f *faultStore) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	if err := f.check("update message"); err != nil {
		return err
	}
	return f.Store.UpdateMessage(ctx, m)
}

func (f *faultStore) UpdateSession(ctx context.Context, s *persistence.Session) error {
	if err := f.check("update session"); err != nil {
		return err
	}
	return f.Store.UpdateSession(ctx, s)
}

func (f *faultStore) AcquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	if err := f.check("acquire lease"); err != nil {
		return err
	}
	return f.Store.AcquireLease(ctx, l, ttl, replace)
}

func textPrompt(sid, text string) *acp.PromptRequest {
	return &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}
}

// TestStorageFaults: a full or read-only database fails the turn with a
// clear error, stores nothing half-written, and the agent keeps serving:
// the session loads, and prompts work again once the disk has room.
func TestStorageFaults(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault error
		want  string
	}{
		{"full", persistence.ErrStorageFull, "the session database is full"},
		{"read-only", persistence.ErrStorageReadOnly, "the session database is read-only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			real := newTestStore(t)
			store := &faultStore{Store: real, faults: &faults{}}
			m := fakemodel.Start()
			t.Cleanup(m.Close)
			m.SetFallback(fakemodel.Reply{Text: "a reply in several words"})
			model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
			a := New(&recorder{}, store, model, Config{Model: "m"}, nil)
			t.Cleanup(a.Close)
			sess, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			sid := sess.SessionID
			if _, err := a.Prompt(ctx, textPrompt(sid, "first")); err != nil {
				t.Fatal(err)
			}
			before, _ := real.Messages(ctx, sid, persistence.MessageFilter{})

			// 1. The database fails before the turn stores anything.
			store.arm(c.fault, 0)
			requests := len(m.Requests())
			_, err = a.Prompt(ctx, textPrompt(sid, "second"))
			checkStorageError(t, err, c.want)
			if n := len(m.Requests()); n != requests {
				t.Errorf("the model was called (%d requests) although the prompt could not be stored", n-requests)
			}
			if got, _ := real.Messages(ctx, sid, persistence.MessageFilter{}); len(got) != len(before) {
				t.Errorf("%d messages after the failed turn, want %d", len(got), len(before))
			}

			// 2. It fails mid-turn: the turn's lease and its prompt are
			// stored, the reply is not.
			store.arm(c.fault, 2)
			_, err = a.Prompt(ctx, textPrompt(sid, "third"))
			checkStorageError(t, err, c.want)
			got, _ := real.Messages(ctx, sid, persistence.MessageFilter{})
			if len(got) != len(before)+1 || got[len(got)-1].Content != "third" {
				t.Fatalf("after a fault mid-turn: %d messages (last %q), want the prompt stored and no partial reply", len(got), got[len(got)-1].Content)
			}

			// 3. The agent keeps serving: the session loads (replay only
			// reads) while the database is still failing.
			store.arm(c.fault, 0)
			if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: sid, Cwd: t.TempDir()}); err != nil {
				t.Fatalf("load while the database fails: %v", err)
			}

			// 4. Room again: the next turn works and its context is valid.
			store.arm(nil, 0)
			if res, err := a.Prompt(ctx, textPrompt(sid, "fourth")); err != nil || res.StopReason != acp.StopEndTurn {
				t.Fatalf("after recovery: %v, %v", res, err)
			}
			if r, err := projection.Verify(ctx, real, sid); err != nil || !r.OK() {
				t.Errorf("rebuild after faults: %v %q", err, r.Differences)
			}
		})
	}
}

func checkStorageError(t *testing.T, err error, want string) {
	t.Helper()
	var e *acp.Error
	if !errors.As(err, &e) || e.Code != acp.CodeInternalError || !strings.Contains(e.Message, want) {
		t.Fatalf("error %v, want -32603 saying %q", err, want)
	}
}

// TestStorageFaultMidStreamMarkedFailedOnRecovery: a reply cut by a storage
// fault mid-stream is left "streaming" only while the store fails; the live
// process marks it failed, with what was streamed, as soon as the store
// answers again (issue 14, case 7).
func TestStorageFaultMidStreamMarkedFailedOnRecovery(t *testing.T) {
	ctx := context.Background()
	real := newTestStore(t)
	store := &faultStore{Store: real, faults: &faults{}}
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: strings.Repeat("token ", 200), DelayMS: 5})
	rec := &recorder{}
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	a := New(rec, store, model, Config{Model: "m"}, nil)
	t.Cleanup(a.Close)
	sess, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	done := make(chan error, 1)
	go func() {
		_, err := a.Prompt(ctx, textPrompt(sid, "talk"))
		done <- err
	}()
	rec.waitFor(t, func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
	store.arm(persistence.ErrStorageFull, 0)
	select {
	case err := <-done:
		checkStorageError(t, err, "the session database is full")
	case <-time.After(hangLimit):
		t.Fatal("the turn did not end on the storage fault")
	}
	reply := func() persistence.Message {
		msgs, err := real.Messages(ctx, sid, persistence.MessageFilter{})
		if err != nil || len(msgs) != 2 {
			t.Fatalf("%d messages, %v", len(msgs), err)
		}
		return msgs[1]
	}
	if r := reply(); r.Status != persistence.StatusStreaming {
		t.Fatalf("while the store fails the reply is %q", r.Status)
	}
	store.arm(nil, 0)
	deadline := time.Now().Add(hangLimit)
	for reply().Status == persistence.StatusStreaming && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if r := reply(); r.Status != persistence.StatusFailed || !strings.HasPrefix(r.Content, "token") {
		t.Fatalf("after recovery the reply is %q %q, want failed with what was streamed", r.Status, r.Content)
	}
}
