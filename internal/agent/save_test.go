package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// savesStore is a real store that counts the saves of assistant replies
// and remembers how much of the last one it stored.
type savesStore struct {
	persistence.Store
	*saves // shared by the fenced views of the store
}

type saves struct {
	mu               sync.Mutex
	appends, updates int
	stored           int // content bytes of the last save
}

// WithFence counts the saves of the fenced view a turn writes through.
func (s *savesStore) WithFence(f persistence.Fence) persistence.Store {
	return &savesStore{Store: s.Store.WithFence(f), saves: s.saves}
}

func (s *savesStore) AppendMessages(ctx context.Context, id string, msgs ...*persistence.Message) error {
	s.mu.Lock()
	for _, m := range msgs {
		if m.Role == persistence.RoleAssistant {
			s.appends++
			s.stored = len(m.Content)
		}
	}
	s.mu.Unlock()
	return s.Store.AppendMessages(ctx, id, msgs...)
}

func (s *savesStore) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	s.mu.Lock()
	s.updates++
	s.stored = len(m.Content)
	s.mu.Unlock()
	return s.Store.UpdateMessage(ctx, m)
}

func (s *savesStore) counts() (appends, updates int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends, s.updates
}

// A growing reply is saved at its first delta, then once a second while it
// streams slowly (a 10 s stream of 4-character chunks every 15 ms: about
// 10 saves, where a save every 100 ms made 100), and by size when it
// streams fast (40 KB in 2 s: a save every 4 KB, about 10, where the
// second alone would lose up to 20 KB to a crash). Simulated time: the
// deltas' arrival times are given to save.
func TestPartialSaveCadence(t *testing.T) {
	for _, c := range []struct {
		name           string
		chunk          string
		every, total   time.Duration
		minUpd, maxUpd int
		maxUnsaved     int // text streamed but not yet stored, at any delta
	}{
		{"slow", "abcd", 15 * time.Millisecond, 10 * time.Second, 9, 10, 4 * 70},
		{"fast", "abcd", 200 * time.Microsecond, 2 * time.Second, 9, 11, partialSaveBytes + 4},
		// 4 MB in 2 s: saves thin out as the reply grows (each rewrites
		// it whole); at most a second of it is ever unsaved. The old
		// cadence made 20 saves of up to 4 MB each.
		{"huge", strings.Repeat("x", 4<<10), 2 * time.Millisecond, 2 * time.Second, 3, 9, 2<<20 + 4<<10},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			real := newTestStore(t)
			if err := real.CreateSession(ctx, &persistence.Session{ID: "sess_a", Cwd: "/tmp"}); err != nil {
				t.Fatal(err)
			}
			store := &savesStore{Store: real, saves: &saves{}}
			a := &core{store: store, cfg: Config{PartialSaveInterval: DefaultPartialSaveInterval}}
			r := &partialReply{a: a, ctx: ctx, sess: &session{id: "sess_a"}, store: store}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			maxUnsaved := 0
			for i := 0; time.Duration(i)*c.every < c.total; i++ {
				now = now.Add(c.every)
				r.text.WriteString(c.chunk)
				if err := r.save(now); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					if n, _ := store.counts(); n != 1 || store.stored != len(c.chunk) {
						t.Fatalf("after the first delta: %d appends storing %d bytes, want the row with the delta", n, store.stored)
					}
				}
				maxUnsaved = max(maxUnsaved, r.text.Len()-store.stored)
			}
			appends, updates := store.counts()
			if appends != 1 || updates < c.minUpd || updates > c.maxUpd {
				t.Errorf("%d appends and %d updates over %s, want 1 and %d-%d", appends, updates, c.total, c.minUpd, c.maxUpd)
			}
			if maxUnsaved > c.maxUnsaved {
				t.Errorf("up to %d bytes streamed and not saved, want at most %d", maxUnsaved, c.maxUnsaved)
			}
		})
	}
}

// Through the agent, a reply streamed slowly is saved at most once a
// second while it streams (and once more when it ends): a save every
// 100 ms made ten a second.
func TestSlowStreamSavedOnceASecond(t *testing.T) {
	ctx := context.Background()
	real := newTestStore(t)
	store := &savesStore{Store: real, saves: &saves{}}
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: strings.Repeat("tok ", 60), Chunks: 60, DelayMS: 20})
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	a := New(&recorder{}, store, model, Config{Model: "m"}, nil)
	t.Cleanup(a.Close)
	sess, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := a.Prompt(ctx, textPrompt(sess.SessionID, "talk")); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	appends, updates := store.counts()
	// One save per whole second the stream took, and the final one.
	if limit := int(took/time.Second) + 1; appends != 1 || updates < 1 || updates > limit {
		t.Errorf("a %s stream: %d appends and %d updates of the reply, want 1 and 1-%d", took.Round(time.Millisecond), appends, updates, limit)
	}
	msgs, err := real.Messages(ctx, sess.SessionID, persistence.MessageFilter{})
	if err != nil || len(msgs) != 2 || msgs[1].Content != strings.Repeat("tok ", 60) || msgs[1].Status != persistence.StatusComplete {
		t.Fatalf("stored %d messages (%v), want the prompt and the whole reply", len(msgs), err)
	}
}
