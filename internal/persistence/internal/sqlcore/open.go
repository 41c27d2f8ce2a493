package sqlcore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// DB is an open database: what a dialect's open returns.
type DB struct {
	// Begin runs fn in one write transaction, committing when it returns
	// nil. Read is the pool for reads outside one.
	Begin func(ctx context.Context, fn func(tx Conn) error) error
	Read  Conn
	// Close closes the database; it must be safe to call more than once.
	Close func() error
}

// ErrAbandoned is what a call still waiting for the database to open gets
// once the store was closed, or given up on by Settle, without it.
var ErrAbandoned = errors.New("the session database did not open before the connection closed")

// opening is how a store gets its database: opened before the store
// (Opened), or in the background (Background), where an open that failed
// is reported by every call that waited for it and tried again by the next
// call (a locked or missing database can be fixed while the editor keeps
// the agent running). The open runs on its own goroutine, so a caller can
// stop waiting (its context, Settle, Close) while it goes on.
type opening struct {
	open   func(ctx context.Context) (*DB, error)
	opened atomic.Pointer[DB] // set once an open succeeded: the fast path

	mu      sync.Mutex
	cur     *attempt      // the last open; nil when Opened
	gone    chan struct{} // closed by abandon: calls stop waiting
	stopped bool
}

type attempt struct {
	done chan struct{} // closed when the open ended
	db   *DB
	err  error
}

// notOpen is why a call found no database: the open's error, the
// caller's context, or ErrAbandoned. The store returns it as it is,
// without naming the operation (errorf), so every call reports an open
// that failed in the same words.
type notOpen struct{ err error }

func (e *notOpen) Error() string { return e.err.Error() }
func (e *notOpen) Unwrap() error { return e.err }

func newOpening(open func(ctx context.Context) (*DB, error)) *opening {
	return &opening{open: open, gone: make(chan struct{})}
}

// db is the open database, once the open (started again now if the last
// one failed) has succeeded.
func (o *opening) db(ctx context.Context) (*DB, error) {
	if db := o.opened.Load(); db != nil {
		return db, nil
	}
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return nil, &notOpen{ErrAbandoned}
	}
	if o.cur.failed() {
		o.startLocked()
	}
	a := o.cur
	o.mu.Unlock()
	select {
	case <-a.done:
		if a.err != nil {
			return nil, &notOpen{a.err}
		}
		return a.db, nil
	case <-o.gone:
		return nil, &notOpen{ErrAbandoned}
	case <-ctx.Done():
		return nil, &notOpen{ctx.Err()}
	}
}

// failed reports whether the attempt ended without a database.
func (a *attempt) failed() bool {
	select {
	case <-a.done:
		return a.err != nil
	default:
		return false
	}
}

func (o *opening) startLocked() {
	a := &attempt{done: make(chan struct{})}
	o.cur = a
	go func() {
		db, err := o.open(context.Background())
		o.mu.Lock()
		defer o.mu.Unlock()
		if err == nil && o.stopped {
			_ = db.Close() // opened after the store was closed: nobody uses it
			db, err = nil, ErrAbandoned
		}
		a.db, a.err = db, err
		if err == nil {
			o.opened.Store(db)
		}
		close(a.done)
	}()
}

// abandonLocked makes every call waiting for the open, and every later
// one, fail with ErrAbandoned.
func (o *opening) abandonLocked() {
	if !o.stopped {
		o.stopped = true
		close(o.gone)
	}
}

// Settle waits up to grace for an open still running; after that the open
// is abandoned: calls waiting for it fail with ErrAbandoned, and a database
// it opens later is closed at once. It returns why the store is not open:
// the last open's error, or ErrAbandoned; nil if it is open. serve calls it when the client has gone, so that the
// connection's record and frames are written when the database opens in
// time, and a database that never answers (a hung network file system)
// does not keep the process from exiting.
func (s *Store) Settle(grace time.Duration) error {
	o := s.opening
	o.mu.Lock()
	a := o.cur
	o.mu.Unlock()
	if a == nil { // Opened
		return nil
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-a.done:
		return a.err
	case <-t.C:
		o.mu.Lock()
		o.abandonLocked()
		o.mu.Unlock()
		return ErrAbandoned
	}
}

// Close closes the database if it opened, for every view of the store; it
// does not wait for an open still running (Settle first).
func (s *Store) Close() error {
	o := s.opening
	o.mu.Lock()
	defer o.mu.Unlock()
	o.abandonLocked()
	if db := o.opened.Load(); db != nil {
		return db.Close()
	}
	return nil
}
