package persistencetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// SameDatabase memoises name per test: it returns a function that calls name
// once per *testing.T and returns that result on every later call with the
// same t. A Backend uses it to name one database per subtest.
func SameDatabase(name func(t *testing.T) string) func(t *testing.T) string {
	var mu sync.Mutex
	names := make(map[*testing.T]string)
	return func(t *testing.T) string {
		mu.Lock()
		defer mu.Unlock()
		n, ok := names[t]
		if !ok {
			n = name(t)
			names[t] = n
			t.Cleanup(func() {
				mu.Lock()
				delete(names, t)
				mu.Unlock()
			})
		}
		return n
	}
}

// concurrently runs write for n writers at once, writer w on store
// w%len(stores), and fails t on their first error.
func concurrently(t *testing.T, stores []persistence.Store, n int, write func(w int, s persistence.Store) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range n {
		wg.Go(func() {
			if err := write(w, stores[w%len(stores)]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// testTwoStoresDifferentSessions writes different sessions from two stores
// at once; each sees everything the other wrote.
func testTwoStoresDifferentSessions(t *testing.T, open func(t *testing.T) persistence.Store) {
	stores := []persistence.Store{open(t), open(t)}
	const sessions, appends = 3, 20
	// Writer w is store w%2's session w/2.
	concurrently(t, stores, len(stores)*sessions, func(w int, s persistence.Store) error {
		id := fmt.Sprintf("p%d-s%d", w%2, w/2)
		if err := s.CreateSession(t.Context(), &persistence.Session{ID: id, Cwd: "/shared"}); err != nil {
			return err
		}
		for i := range appends {
			if err := s.AppendMessages(t.Context(), id, userMsg(fmt.Sprint(id, "#", i))); err != nil {
				return fmt.Errorf("%s append %d: %w", id, i, err)
			}
		}
		return nil
	})
	for p, s := range stores {
		list := listPages(t, s, persistence.ListSessionsOptions{Cwd: "/shared", Limit: 4})
		if n := len(slices.Concat(list...)); n != len(stores)*sessions {
			t.Errorf("store %d lists %d sessions, want %d", p, n, len(stores)*sessions)
		}
		for q := range stores {
			for k := range sessions {
				id := fmt.Sprintf("p%d-s%d", q, k)
				msgs := mustMessages(t, s, id, persistence.MessageFilter{})
				if len(msgs) != appends {
					t.Fatalf("store %d reads %d messages of %s, want %d", p, len(msgs), id, appends)
				}
				for i, m := range msgs {
					if m.Seq != int64(i+1) || m.Content != fmt.Sprint(id, "#", i) {
						t.Fatalf("store %d, %s message %d: seq %d %q", p, id, i, m.Seq, m.Content)
					}
				}
			}
		}
	}
}

// testTwoStoresOneSession appends to one session from two stores at once:
// seqs stay gap-free and unique, each writer's messages keep its order, and
// a compaction from one store is seen by the other.
func testTwoStoresOneSession(t *testing.T, open func(t *testing.T) persistence.Store) {
	a, b := open(t), open(t)
	ctx := t.Context()
	mustCreate(t, a, &persistence.Session{ID: "shared"})
	const writers, appends = 4, 25
	concurrently(t, []persistence.Store{a, b}, writers, func(w int, s persistence.Store) error {
		for i := range appends {
			if err := s.AppendMessages(ctx, "shared", userMsg(fmt.Sprintf("w%d-%d", w, i))); err != nil {
				return fmt.Errorf("writer %d append %d: %w", w, i, err)
			}
		}
		return nil
	})
	msgs := mustMessages(t, b, "shared", persistence.MessageFilter{})
	if len(msgs) != writers*appends {
		t.Fatalf("%d messages, want %d", len(msgs), writers*appends)
	}
	next := make([]int, writers)
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d: not gap-free", i, m.Seq)
		}
		var w, j int
		if _, err := fmt.Sscanf(m.Content, "w%d-%d", &w, &j); err != nil || j != next[w] {
			t.Fatalf("message %q at seq %d: writer order broken (want w%d-%d)", m.Content, m.Seq, w, next[w])
		}
		next[w]++
	}

	c := &persistence.Compaction{SessionID: "shared", Policy: "p", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID}}
	mustCompact(t, a, c, &persistence.Message{Role: persistence.RoleSummary, Content: "sum"})
	active := mustMessages(t, b, "shared", persistence.MessageFilter{ActiveOnly: true})
	if len(active) != writers*appends-1 || active[len(active)-1].Content != "sum" {
		t.Errorf("other store sees %d active messages (last %q), want %d ending with the summary",
			len(active), active[len(active)-1].Content, writers*appends-1)
	}
}
