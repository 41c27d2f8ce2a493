package main

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
)

// TestOpeningStoreRetriesAfterFailure: a failed open is reported by the
// call that waited for it, and the next call opens again; a view made
// while the store cannot be opened reports the failure without opening it
// (a write would otherwise be made without its origin).
func TestOpeningStoreRetriesAfterFailure(t *testing.T) {
	db := filepath.Join(t.TempDir(), "crow.db")
	var opens atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	broken := errors.New("disk not mounted yet")
	o := openInBackground(func(ctx context.Context) (persistence.Recorder, error) {
		opens.Add(1)
		if failing.Load() {
			return nil, broken
		}
		return backend.Open(ctx, db)
	}, zap.NewNop())
	defer o.Close()
	ctx := context.Background()
	// The first call answers with the first open's error, or with a
	// second open's if the first had already failed when it came.
	if _, err := o.GetSession(ctx, "sess_x"); !errors.Is(err, broken) {
		t.Fatalf("first call: %v, want the open's error", err)
	}
	before := opens.Load()
	view := o.WithOrigin(persistence.Origin{ConnectionID: "conn_1"}) // its open fails too
	if err := view.CreateSession(ctx, &persistence.Session{ID: "sess_1", Cwd: "/"}); !errors.Is(err, broken) {
		t.Fatalf("view of a store that did not open: %v", err)
	}
	if n := opens.Load(); n != before+1 {
		t.Fatalf("%d opens, want %d: the view must not open the store", n, before+1)
	}
	failing.Store(false)
	if err := o.CreateSession(ctx, &persistence.Session{ID: "sess_1", Cwd: "/"}); err != nil {
		t.Fatalf("after the store can open: %v", err)
	}
	if _, err := o.GetSession(ctx, "sess_1"); err != nil || opens.Load() != before+2 {
		t.Fatalf("the opened store is kept: %v, %d opens", err, opens.Load())
	}
}

// TestOpeningStoreSettle: a client that has gone waits for an open still
// running for the grace only; then calls fail with errStoreAbandoned and a
// store that opens later is closed.
func TestOpeningStoreSettle(t *testing.T) {
	release := make(chan struct{})
	closed := make(chan struct{})
	o := openInBackground(func(ctx context.Context) (persistence.Recorder, error) {
		<-release
		s, err := backend.Open(ctx, filepath.Join(t.TempDir(), "crow.db"))
		if err != nil {
			return nil, err
		}
		return closeNotifier{s, closed}, nil
	}, zap.NewNop())
	start := time.Now()
	o.settle(50 * time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("settled after %s", d)
	}
	if _, err := o.GetSession(context.Background(), "x"); !errors.Is(err, errStoreAbandoned) {
		t.Fatalf("after the grace: %v", err)
	}
	if err := o.failed(); !errors.Is(err, errStoreAbandoned) {
		t.Fatalf("failed() = %v", err)
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the store opened after the grace was not closed")
	}
}

type closeNotifier struct {
	persistence.Recorder
	closed chan struct{}
}

func (c closeNotifier) Close() error {
	close(c.closed)
	return c.Recorder.Close()
}
