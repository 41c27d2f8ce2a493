package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/persistence"
)

// acquireCounter counts the lease writes that reach the store.
type acquireCounter struct {
	persistence.Store
	n atomic.Int32
}

func (c *acquireCounter) AcquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	c.n.Add(1)
	return c.Store.AcquireLease(ctx, l, ttl, replace)
}

// A lease taken a moment ago is not written again on the next prompt; one
// older than a third of its TTL is, and one released is taken afresh.
func TestLeaseRenewedOnlyWhenDue(t *testing.T) {
	ctx := context.Background()
	real := newTestStore(t)
	s := &persistence.Session{ID: "sess_lease", Cwd: t.TempDir()}
	if err := real.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	store := &acquireCounter{Store: real}
	const ttl = time.Hour // the heartbeat never runs during the test
	l := newLeases(store, "conn_test", ttl, zap.NewNop())
	t.Cleanup(l.close)

	want := func(n int32, when string) {
		t.Helper()
		if got := store.n.Load(); got != n {
			t.Fatalf("%s: %d lease writes, want %d", when, got, n)
		}
	}
	if err := l.acquire(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	want(1, "first prompt")
	if err := l.acquire(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	want(1, "second prompt at once")
	// As if the last renewal were a third of the TTL ago.
	l.mu.Lock()
	l.held[s.ID] = time.Now().Add(-ttl / 3)
	l.mu.Unlock()
	if err := l.acquire(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	want(2, "a prompt a third of the TTL later")
	l.release(ctx, s.ID)
	if err := l.acquire(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	want(3, "a prompt after release")
	if !l.holds(s.ID) {
		t.Fatal("lease not held after acquire")
	}
}
