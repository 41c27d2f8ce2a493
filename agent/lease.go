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
	"github.com/crow-acp/crow-acp/persistence"
)

// DefaultLeaseTTL is how long a session's lease outlives its holder's last
// heartbeat. Heartbeats come every third of it.
const DefaultLeaseTTL = 30 * time.Second

// leases keeps this agent's session leases: one writer per session across
// processes sharing a database.
type leases struct {
	store persistence.Store
	owner string
	ttl   time.Duration
	host  string
	log   *zap.Logger

	mu      sync.Mutex
	held    map[string]time.Time // session → when this agent last took or renewed its lease
	started bool
	closed  bool
	stop    chan struct{}
	done    chan struct{}
}

func newLeases(store persistence.Store, owner string, ttl time.Duration, log *zap.Logger) *leases {
	host, _ := os.Hostname()
	return &leases{store: store, owner: owner, ttl: ttl, host: host, log: log,
		held: make(map[string]time.Time), stop: make(chan struct{}), done: make(chan struct{})}
}

// acquire takes (or renews) the session's lease. A lease held by a process
// on this host that no longer exists is taken over at once, an expired one
// by the store. The first time it takes a session, it repairs what a dead
// writer left: a reply still marked streaming becomes interrupted. The
// error is a clear -32600 when another live process holds the session.
//
// A lease this agent took or renewed less than a third of its TTL ago is
// valid for two thirds of it still, and the heartbeat renews it: a prompt
// then costs no write.
func (l *leases) acquire(ctx context.Context, sessionID string) error {
	l.mu.Lock()
	at, ok := l.held[sessionID]
	fresh := ok && !l.closed && time.Since(at) < l.ttl/3
	l.mu.Unlock()
	if fresh {
		return nil
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
		return &leasedError{acp.InvalidRequest("session %s is open for writing in another crow-acp process (pid %d on %s, last heartbeat %s ago): "+
			"close it there first; if that process is gone, its lock expires at %s",
			sessionID, h.PID, h.Host, time.Since(h.HeartbeatAt).Round(time.Second), h.ExpiresAt.Local().Format(time.RFC3339))}
	}
	if err != nil {
		return fmt.Errorf("lock session: %w", err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return acp.InternalError("the agent is shutting down")
	}
	_, had := l.held[sessionID]
	first := !had
	l.held[sessionID] = taken
	if !l.started {
		l.started = true
		go l.heartbeat()
	}
	l.mu.Unlock()
	if first {
		if n, err := l.store.InterruptStreaming(ctx, sessionID); err != nil {
			return fmt.Errorf("repair session: %w", err)
		} else if n > 0 {
			l.log.Warn("a reply was cut by a crash; kept and marked interrupted", zap.String("session", sessionID), zap.Int("messages", n))
		}
	}
	return nil
}

// leasedError is acquire's answer when another live process holds the
// session; on the wire it is its -32600.
type leasedError struct{ err *acp.Error }

func (e *leasedError) Error() string { return e.err.Error() }
func (e *leasedError) Unwrap() error { return e.err }

func (l *leases) lease(sessionID string) *persistence.Lease {
	return &persistence.Lease{SessionID: sessionID, Owner: l.owner, PID: os.Getpid(), Host: l.host}
}

// holds reports whether this agent holds the session's lease.
func (l *leases) holds(sessionID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.held[sessionID]
	return ok
}

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
		renewed := time.Now()
		ids, err := l.store.RenewLeases(context.Background(), l.owner, l.ttl)
		if err != nil {
			l.log.Warn("lease heartbeat failed", zap.Error(err))
			continue
		}
		still := make(map[string]bool, len(ids))
		for _, id := range ids {
			still[id] = true
		}
		l.mu.Lock()
		for id := range l.held {
			if !still[id] {
				l.log.Warn("lost the lease of a session (expired and taken by another process)", zap.String("session", id))
				delete(l.held, id)
				continue
			}
			l.held[id] = renewed
		}
		l.mu.Unlock()
	}
}

// release gives up the session's lease (session/close, session/delete).
func (l *leases) release(ctx context.Context, sessionID string) {
	l.mu.Lock()
	_, held := l.held[sessionID]
	delete(l.held, sessionID)
	l.mu.Unlock()
	if !held {
		return
	}
	if err := l.store.ReleaseLease(context.WithoutCancel(ctx), sessionID, l.owner); err != nil {
		l.log.Warn("release lease", zap.String("session", sessionID), zap.Error(err))
	}
}

// close stops the heartbeat and releases every lease.
func (l *leases) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	started := l.started
	ids := make([]string, 0, len(l.held))
	for id := range l.held {
		ids = append(ids, id)
	}
	l.held = map[string]time.Time{}
	l.mu.Unlock()
	if started {
		close(l.stop)
		<-l.done
	}
	for _, id := range ids {
		if err := l.store.ReleaseLease(context.Background(), id, l.owner); err != nil {
			l.log.Warn("release lease", zap.String("session", id), zap.Error(err))
		}
	}
}
