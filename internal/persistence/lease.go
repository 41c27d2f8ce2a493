package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lease says which process may write a session: one writer per session,
// held while a turn runs. A lease expires unless its holder renews it (a
// heartbeat), so the session of a process that died or was paused (a
// laptop asleep) is taken over at the latest one TTL later; a holder on the
// same host whose pid no longer exists can be replaced at once.
type Lease struct {
	SessionID string
	Owner     string // unique per holder (a connection id)
	PID       int
	Host      string
	// Generation rises by one each time the session's lease is acquired,
	// by anyone: it fences the writes of earlier holders (see Fence).
	Generation  int64
	AcquiredAt  time.Time
	HeartbeatAt time.Time
	ExpiresAt   time.Time // a lease is live while the store's clock is before this
	// Abandoned is set by AcquireLease when the lease it replaced was never
	// released: its holder died, or was paused past its expiry, and may
	// have left a reply streaming.
	Abandoned bool
}

// Fence is what a turn's writes carry: the lease they were made under.
func (l *Lease) Fence() Fence {
	return Fence{SessionID: l.SessionID, Owner: l.Owner, Generation: l.Generation}
}

// Fence names one acquisition of a session's lease. A write made through a
// fenced store (Store.WithFence) checks, in its own transaction, that this
// is still the session's live lease, and is refused with ErrLeaseLost
// otherwise: a writer paused past its lease's expiry changes nothing after
// it resumes, whoever took the session meanwhile. Like an Origin, a fence is
// always passed explicitly, never carried by a context.
type Fence struct {
	SessionID  string
	Owner      string
	Generation int64
}

// ErrLeaseLost is returned (wrapped) by a fenced write whose lease expired
// or was taken by another holder; the write changed nothing.
var ErrLeaseLost = errors.New("the session's lease was lost")

// ErrLeaseHeld is wrapped by a LeaseHeldError.
var ErrLeaseHeld = errors.New("session is leased by another process")

// LeaseHeldError is returned when another owner holds a live lease.
type LeaseHeldError struct{ Holder Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("session %s is leased by pid %d on %s until %s",
		e.Holder.SessionID, e.Holder.PID, e.Holder.Host, e.Holder.ExpiresAt.Format(time.RFC3339))
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Leases is the lease table. Its methods ignore a Fence in their context.
type Leases interface {
	// AcquireLease gives l.SessionID to l.Owner for ttl, measured from the
	// store's clock, when the session has no live lease, its lease is
	// already l.Owner's, or it is held by replace (a non-empty owner the
	// caller has found dead). It fills l's times, its Generation, one more
	// than the session's previous lease had, and Abandoned. On refusal it
	// returns a
	// *LeaseHeldError naming the holder. ErrNotFound if the session does
	// not exist.
	AcquireLease(ctx context.Context, l *Lease, ttl time.Duration, replace string) error
	// RenewLeases extends every live lease of owner by ttl and returns the
	// session ids it still holds. An expired lease is not renewed: its
	// holder has lost it even if nobody took it yet.
	RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]string, error)
	// ReleaseLease ends owner's live lease on the session at once: it stays
	// recorded, with no owner and its generation. A lease held by someone
	// else, an expired one, or none, is left alone.
	ReleaseLease(ctx context.Context, sessionID, owner string) error
	// GetLease returns the session's lease, live or not; ErrNotFound if
	// there has been none.
	GetLease(ctx context.Context, sessionID string) (*Lease, error)
}
