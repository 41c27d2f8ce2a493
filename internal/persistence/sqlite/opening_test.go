package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
)

// TestOpeningRetriesAfterFailure: a failed open is reported by the call
// that waited for it, in the words failed gives it, and the next call opens
// again; a view made while the store cannot be opened opens nothing itself,
// and once the store opens it writes as its origin.
func TestOpeningRetriesAfterFailure(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "state") // a file where the directory goes
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("disk not mounted yet")
	var failures atomic.Int32
	s := OpenBackground(filepath.Join(blocker, "crow.db"), func(err error) error {
		failures.Add(1)
		return fmt.Errorf("%w: %w", broken, err)
	})
	defer s.Close()
	ctx := t.Context()
	// The first call answers with the first open's error, or with a
	// second open's if the first had already failed when it came.
	_, err := s.GetSession(ctx, "sess_x")
	if !errors.Is(err, broken) || !strings.HasPrefix(err.Error(), broken.Error()) {
		t.Fatalf("first call: %v, want the open's error as failed words it", err)
	}
	before := failures.Load()
	view := s.WithOrigin(persistence.Origin{ConnectionID: "conn_1"})
	if n := failures.Load(); n != before {
		t.Fatalf("%d opens failed, want %d: a view must not open the store", n, before)
	}
	if err := view.CreateSession(ctx, &persistence.Session{ID: "sess_1", Cwd: "/"}); !errors.Is(err, broken) || failures.Load() != before+1 {
		t.Fatalf("view of a store that did not open: %v after %d failed opens", err, failures.Load())
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if err := view.CreateSession(ctx, &persistence.Session{ID: "sess_1", Cwd: "/"}); err != nil {
		t.Fatalf("after the store can open: %v", err)
	}
	if err := view.AppendMessages(ctx, "sess_1", &persistence.Message{Role: persistence.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, "sess_1", persistence.EventFilter{})
	if err != nil || len(evs) == 0 || evs[len(evs)-1].ConnectionID != "conn_1" {
		t.Fatalf("the view's write is not recorded as its origin's: %v, %+v", err, evs)
	}
	if _, err := s.GetSession(ctx, "sess_1"); err != nil || failures.Load() != before+1 {
		t.Fatalf("the opened store is kept: %v, %d failed opens", err, failures.Load())
	}
}

// TestOpeningSettle: once the client has gone, an open still running is
// waited for the grace only; then the calls waiting for it, and later
// ones, fail with ErrAbandoned, and a database it opens later is closed.
func TestOpeningSettle(t *testing.T) {
	started, release, closed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	path := filepath.Join(t.TempDir(), "crow.db")
	s := &Store{sqlcore.Background(dialect, func(ctx context.Context) (*sqlcore.DB, error) {
		close(started)
		<-release
		p, err := open(ctx, path, pragmas)
		if err != nil {
			return nil, err
		}
		db := p.database()
		closeDB := db.Close
		db.Close = func() error { close(closed); return closeDB() }
		return db, nil
	})}
	waiting := make(chan error, 1)
	go func() {
		_, err := s.GetSession(context.Background(), "x")
		waiting <- err
	}()
	<-started
	start := time.Now()
	if err := s.Settle(50 * time.Millisecond); !errors.Is(err, sqlcore.ErrAbandoned) {
		t.Fatalf("Settle = %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("settled after %s", d)
	}
	for _, err := range []error{<-waiting, s.CreateSession(context.Background(), &persistence.Session{ID: "y"})} {
		if !errors.Is(err, sqlcore.ErrAbandoned) {
			t.Fatalf("after the grace: %v", err)
		}
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the database opened after the grace was not closed")
	}
}
