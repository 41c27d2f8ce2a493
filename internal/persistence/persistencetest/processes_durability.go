package persistencetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// testTwoStoresLease has two stores (two processes, two machines) race for
// one session's lease, several owners each: exactly one wins, every other
// is refused and told who holds it, both stores see the same holder, and the
// session passes to another process once the holder releases it.
func testTwoStoresLease(t *testing.T, open func(t *testing.T) persistence.Store) {
	a, b := open(t), open(t)
	ctx := t.Context()
	mustCreate(t, a, &persistence.Session{ID: "leased"})
	const perStore = 4
	type result struct {
		owner string
		err   error
	}
	results := make(chan result, 2*perStore)
	var wg sync.WaitGroup
	for p, s := range []persistence.Store{a, b} {
		for i := range perStore {
			owner := fmt.Sprintf("p%d-o%d", p, i)
			wg.Go(func() {
				l := &persistence.Lease{SessionID: "leased", Owner: owner, PID: 1000*(p+1) + i, Host: fmt.Sprint("host", p)}
				results <- result{owner, s.AcquireLease(ctx, l, time.Minute, "")}
			})
		}
	}
	wg.Wait()
	close(results)
	var winners []string
	for r := range results {
		var held *persistence.LeaseHeldError
		switch {
		case r.err == nil:
			winners = append(winners, r.owner)
		case errors.As(r.err, &held):
			if held.Holder.Owner == r.owner || held.Holder.Owner == "" {
				t.Errorf("%s refused with holder %+v", r.owner, held.Holder)
			}
		default:
			t.Errorf("%s: AcquireLease error %v, want success or a LeaseHeldError", r.owner, r.err)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d owners got the lease (%v), want exactly one", len(winners), winners)
	}
	winner := winners[0]
	for i, s := range []persistence.Store{a, b} {
		l, err := s.GetLease(ctx, "leased")
		if err != nil || l.Owner != winner {
			t.Errorf("store %d sees lease %+v, %v; want owner %s", i, l, err, winner)
		}
	}

	// The holder's store releases; the other store's owner takes over.
	holderStore, other, otherOwner := a, b, "p1-next"
	if winner[1] == '1' {
		holderStore, other, otherOwner = b, a, "p0-next"
	}
	l := &persistence.Lease{SessionID: "leased", Owner: otherOwner, PID: 9, Host: "h"}
	if err := other.AcquireLease(ctx, l, time.Minute, ""); !errors.Is(err, persistence.ErrLeaseHeld) {
		t.Fatalf("AcquireLease while held = %v, want ErrLeaseHeld", err)
	}
	must(t, holderStore.ReleaseLease(ctx, "leased", winner))
	if err := other.AcquireLease(ctx, l, time.Minute, ""); err != nil {
		t.Fatalf("AcquireLease after release: %v", err)
	}
	if got, err := holderStore.GetLease(ctx, "leased"); err != nil || got.Owner != otherOwner {
		t.Errorf("after the hand-over the first store sees %+v, %v", got, err)
	}
}

// testTwoStoresEvents appends to one event stream from two stores at once:
// seqs stay gap-free and unique, each writer's events keep its order, and
// bodies come back byte for byte through either store.
func testTwoStoresEvents(t *testing.T, open func(t *testing.T) persistence.Store) {
	a, b := open(t), open(t)
	ctx := t.Context()
	const writers, batches = 4, 15
	concurrently(t, []persistence.Store{a, b}, writers, func(w int, s persistence.Store) error {
		for i := range batches {
			evs := []*persistence.Event{
				{Stream: "conn_shared", Kind: persistence.EventNotification, Direction: persistence.DirOut,
					Body: fmt.Appendf(nil, `{"w":%d,"i":%d,"half":0}`, w, i)},
				{Stream: "conn_shared", Kind: persistence.EventNotification, Direction: persistence.DirOut,
					Body: fmt.Appendf(nil, `{"w":%d,"i":%d,"half":1}`, w, i)},
			}
			if err := s.AppendEvents(ctx, evs...); err != nil {
				return fmt.Errorf("writer %d batch %d: %w", w, i, err)
			}
			if evs[1].Seq != evs[0].Seq+1 {
				return fmt.Errorf("writer %d batch %d: seqs %d, %d not contiguous", w, i, evs[0].Seq, evs[1].Seq)
			}
		}
		return nil
	})
	for p, s := range []persistence.Store{a, b} {
		got := mustEvents(t, s, "conn_shared")
		if len(got) != writers*batches*2 {
			t.Fatalf("store %d: %d events, want %d", p, len(got), writers*batches*2)
		}
		next := make([]int, writers)
		for i, e := range got {
			if e.Seq != int64(i+1) {
				t.Fatalf("store %d: event %d has seq %d: not gap-free", p, i, e.Seq)
			}
			var body struct{ W, I, Half int }
			if err := json.Unmarshal(e.Body, &body); err != nil {
				t.Fatalf("store %d: body %q: %v", p, e.Body, err)
			}
			if want := fmt.Sprintf(`{"w":%d,"i":%d,"half":%d}`, body.W, body.I, body.Half); string(e.Body) != want {
				t.Fatalf("body %q changed", e.Body)
			}
			if 2*body.I+body.Half != next[body.W] {
				t.Fatalf("store %d: writer %d's events out of order at seq %d", p, body.W, e.Seq)
			}
			next[body.W]++
		}
	}
}

// testTwoStoresFencing: one store writes a session under its lease as fast
// as it can while another store takes the lease over (its holder declared
// dead) and writes. Every write of the first store that succeeded is
// stored, all of them before the new holder's first message, and every
// write it tried after the takeover is refused with ErrLeaseLost.
func testTwoStoresFencing(t *testing.T, open func(t *testing.T) persistence.Store) {
	a, b := open(t), open(t)
	ctx := t.Context()
	mustCreate(t, a, &persistence.Session{ID: "fenced"})
	la := &persistence.Lease{SessionID: "fenced", Owner: "paused", PID: 1, Host: "a"}
	must(t, a.AcquireLease(ctx, la, time.Minute, ""))
	fenced := a.WithFence(la.Fence())
	var (
		stored  []string
		lastErr error
		started = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		// Until refused, for 10 s at most; a short pause between writes
		// lets the taker's lock request in (PostgreSQL's row locks are not
		// granted in arrival order).
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			if i == 5 {
				close(started)
			}
			if i > 5 {
				time.Sleep(time.Millisecond)
			}
			text := fmt.Sprint("a", i)
			if err := fenced.AppendMessages(ctx, "fenced", userMsg(text)); err != nil {
				lastErr = err
				return
			}
			stored = append(stored, text)
		}
	}()
	select {
	case <-started:
	case <-done:
		t.Fatalf("the first holder stopped early: %v", lastErr)
	}
	lb := &persistence.Lease{SessionID: "fenced", Owner: "taker", PID: 2, Host: "b"}
	must(t, b.AcquireLease(ctx, lb, time.Minute, "paused"))
	must(t, b.WithFence(lb.Fence()).AppendMessages(ctx, "fenced", userMsg("b")))
	<-done
	if !errors.Is(lastErr, persistence.ErrLeaseLost) {
		t.Fatalf("the first holder's writes after the takeover: %v, want ErrLeaseLost (%d stored)", lastErr, len(stored))
	}
	var got []string
	for _, m := range mustMessages(t, b, "fenced", persistence.MessageFilter{}) {
		got = append(got, m.Content)
	}
	if want := append(slices.Clone(stored), "b"); !slices.Equal(got, want) {
		t.Errorf("stored %q, want the first holder's %d accepted writes, then b", got, len(stored))
	}
}
