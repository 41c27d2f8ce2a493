package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// DefaultLeaseTTL is how long a session's lease outlives its holder's last
// heartbeat. Heartbeats come every third of it.
const DefaultLeaseTTL = 30 * time.Second

// leases takes and keeps this agent's session leases: one writer per
// session across processes sharing a database. A lease is held only while a
// turn runs (or a repair or compaction when a session is opened), so two
// processes (two editor windows on one thread) can take turns on a session.
// Every write a holder makes carries the lease's fence: once the lease is
// lost (expired while the process was paused, then taken by another
// process) the store refuses the write, and the heartbeat that notices
// aborts the turn. The lease itself (when it was taken, its fence, what to
// abort) belongs to its session (session.lease); leases keeps only the set
// of sessions its heartbeat renews.
type leases struct {
	store LeaseStore
	owner string
	ttl   time.Duration
	host  string
	log   *zap.Logger

	mu      sync.Mutex
	held    map[*session]struct{} // the sessions whose lease is held, for the heartbeat
	started bool
	closed  bool
	stop    chan struct{}
	done    chan struct{}
}

func newLeases(store LeaseStore, owner string, ttl time.Duration, log *zap.Logger) *leases {
	host, _ := os.Hostname()
	return &leases{store: store, owner: owner, ttl: ttl, host: host, log: log,
		held: make(map[*session]struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// errHeldHere is hold's answer when this agent already holds the session
// (its turn is running).
var errHeldHere = errors.New("the session's lease is already held in this process")

// hold takes the session's lease and keeps it, with its fence, in the
// session: every write made through Agent.writes is refused once the lease
// is lost, and lost (if non-nil) is called with a clear error when the
// heartbeat finds it lost. A lease held by a process on this host that no longer exists is
// taken over at once, an expired one by the store. When the lease was
// abandoned (never released), the replies its holder left streaming are
// marked interrupted first: while nobody else holds the lease, nobody else
// is streaming. The error is a clear -32600 when another
// live process holds the session.
func (l *leases) hold(ctx context.Context, sess *session, lost func(error)) error {
	sessionID := sess.id
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	switch {
	case closed:
		return acp.InternalError("The agent is shutting down; try again once it has restarted.")
	case sess.holdsLease():
		return errHeldHere
	}
	taken := time.Now()
	lease := l.lease(sessionID)
	err := l.store.AcquireLease(ctx, lease, l.ttl, "")
	var held *persistence.LeaseHeldError
	if errors.As(err, &held) && held.Holder.Host == l.host && !processAlive(held.Holder.PID) {
		l.log.Info("taking over the lease of a dead process", zap.String("session", sessionID),
			zap.Int("pid", held.Holder.PID))
		lease = l.lease(sessionID)
		err = l.store.AcquireLease(ctx, lease, l.ttl, held.Holder.Owner)
	}
	if errors.As(err, &held) {
		h := held.Holder
		return &leasedError{acp.InvalidRequest("A turn is running in session %s in another crow-acp process (pid %d on %s, last heartbeat %s ago): "+
			"wait for it to end and try again; if that process is gone, its lock expires at %s.",
			sessionID, h.PID, h.Host, time.Since(h.HeartbeatAt).Round(time.Second), h.ExpiresAt.Local().Format(time.RFC3339))}
	}
	if err != nil {
		return fmt.Errorf("lock session: %w", err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = l.store.ReleaseLease(context.WithoutCancel(ctx), sessionID, l.owner)
		return acp.InternalError("The agent is shutting down; try again once it has restarted.")
	}
	sess.mu.Lock()
	sess.lease = &heldLease{taken: taken, fence: lease.Fence(), lost: lost}
	sess.mu.Unlock()
	l.held[sess] = struct{}{}
	if !l.started {
		l.started = true
		go l.heartbeat()
	}
	l.mu.Unlock()
	sess.req.Cache.Leased(lease.Generation)
	if !lease.Abandoned {
		return nil
	}
	var n int
	err = sess.req.Rewrite(func() (err error) {
		n, err = l.store.WithFence(lease.Fence()).InterruptStreaming(ctx, sessionID)
		return err
	})
	if err != nil {
		l.release(ctx, sess)
		return fmt.Errorf("repair session: %w", err)
	}
	if n > 0 {
		l.log.Warn("a reply was cut by a crash or a lost lease; kept and marked interrupted", zap.String("session", sessionID), zap.Int("messages", n))
	}
	return nil
}

// briefly runs fn under the session's lease, for a write outside any turn
// (the repair and compaction when a session is opened). When the session is
// busy (its turn runs here or in another live process), fn does not run:
// the turn's holder does that work.
func (l *leases) briefly(ctx context.Context, sess *session, fn func(ctx context.Context)) error {
	err := l.hold(ctx, sess, nil)
	var leased *leasedError
	if errors.Is(err, errHeldHere) || errors.As(err, &leased) {
		return nil
	}
	if err != nil {
		return err
	}
	defer l.release(ctx, sess)
	fn(ctx)
	return nil
}

// leasedError is hold's answer when another live process holds the
// session; on the wire it is its -32600.
type leasedError struct{ err *acp.Error }

func (e *leasedError) Error() string { return e.err.Error() }
func (e *leasedError) Unwrap() error { return e.err }

func (l *leases) lease(sessionID string) *persistence.Lease {
	return &persistence.Lease{SessionID: sessionID, Owner: l.owner, PID: os.Getpid(), Host: l.host}
}

// heartbeat renews this agent's leases every third of their TTL. A lease
// the store no longer renews (expired: this process was paused or could not
// reach the store for a whole TTL) is lost: what holds it is aborted.
func (l *leases) heartbeat() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		// A bug in one renewal must not stop the heartbeats that keep
		// every other lease.
		_ = acp.Safely(l.log, "the lease heartbeat", func() error { l.renew(); return nil })
	}
}

func (l *leases) renew() {
	l.mu.Lock()
	n := len(l.held)
	l.mu.Unlock()
	if n == 0 {
		return
	}
	asked := time.Now()
	ids, err := l.store.RenewLeases(context.Background(), l.owner, l.ttl)
	if err != nil {
		l.log.Warn("lease heartbeat failed", zap.Error(err))
		return
	}
	still := make(map[string]bool, len(ids))
	for _, id := range ids {
		still[id] = true
	}
	var lost []func(error)
	l.mu.Lock()
	for sess := range l.held {
		sess.mu.Lock()
		h := sess.lease
		if h != nil && (still[sess.id] || h.taken.After(asked)) {
			sess.mu.Unlock()
			continue
		}
		if h != nil {
			h.gone = true // its fence stays until the holder releases it
		}
		sess.mu.Unlock()
		delete(l.held, sess)
		if h == nil {
			continue
		}
		l.log.Warn("lost the lease of a session (it expired; another process may have taken it)", zap.String("session", sess.id))
		if h.lost != nil {
			lost = append(lost, h.lost)
		}
	}
	l.mu.Unlock()
	for _, abort := range lost {
		abort(errLeaseLost)
	}
}

// errLeaseLost is the cause of a turn aborted by the heartbeat.
var errLeaseLost = fmt.Errorf("heartbeat: %w", persistence.ErrLeaseLost)

// release gives up the session's lease (the turn ended).
func (l *leases) release(ctx context.Context, sess *session) {
	l.mu.Lock()
	delete(l.held, sess)
	sess.mu.Lock()
	held := sess.lease != nil
	sess.lease = nil
	sess.mu.Unlock()
	l.mu.Unlock()
	if !held {
		return
	}
	if err := l.store.ReleaseLease(context.WithoutCancel(ctx), sess.id, l.owner); err != nil {
		l.log.Warn("release lease", zap.String("session", sess.id), zap.Error(err))
	}
}

// close stops the heartbeat. A turn still running keeps its lease until
// it ends and releases it (its last writes need it); one that never ends
// leaves it abandoned, and the next holder repairs what it left.
func (l *leases) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	started := l.started
	l.mu.Unlock()
	if started {
		close(l.stop)
		<-l.done
	}
}
