package persistencetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/crow-acp/crow-acp/persistence"
)

// processTests open two stores on one database, as two crow-acp processes
// (on one machine for SQLite, on several for PostgreSQL) would.
var processTests = []struct {
	name string
	fn   func(t *testing.T, open func(t *testing.T) persistence.Store)
}{
	{"TwoStoresDifferentSessions", testTwoStoresDifferentSessions},
	{"TwoStoresOneSession", testTwoStoresOneSession},
	{"TwoStoresLease", testTwoStoresLease},
	{"TwoStoresFencing", testTwoStoresFencing},
	{"TwoStoresEvents", testTwoStoresEvents},
}

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

// testTwoStoresDifferentSessions writes different sessions from two stores
// at once; each sees everything the other wrote.
func testTwoStoresDifferentSessions(t *testing.T, open func(t *testing.T) persistence.Store) {
	stores := []persistence.Store{open(t), open(t)}
	const sessions, appends = 3, 20
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*sessions)
	for p, s := range stores {
		for k := range sessions {
			id := fmt.Sprintf("p%d-s%d", p, k)
			wg.Go(func() {
				ctx := t.Context()
				if err := s.CreateSession(ctx, &persistence.Session{ID: id, Cwd: "/shared"}); err != nil {
					errs <- err
					return
				}
				for i := range appends {
					if err := s.AppendMessages(ctx, id, userMsg(fmt.Sprint(id, "#", i))); err != nil {
						errs <- fmt.Errorf("%s append %d: %w", id, i, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
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
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for i := range appends {
				m := userMsg(fmt.Sprintf("w%d-%d", w, i))
				if err := s.AppendMessages(ctx, "shared", m); err != nil {
					errs <- fmt.Errorf("writer %d append %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
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
