package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lease says which process may write a session: one writer per session. A
// lease expires unless its holder renews it (a heartbeat), so the session of
// a process that died is taken over at the latest one TTL later; a holder on
// the same host whose pid no longer exists can be replaced at once.
type Lease struct {
	SessionID   string
	Owner       string // unique per holder (a connection id)
	PID         int
	Host        string
	AcquiredAt  time.Time
	HeartbeatAt time.Time
	ExpiresAt   time.Time
}

// ErrLeaseHeld is wrapped by a LeaseHeldError.
var ErrLeaseHeld = errors.New("session is leased by another process")

// LeaseHeldError is returned when another owner holds a live lease.
type LeaseHeldError struct{ Holder Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("session %s is leased by pid %d on %s until %s",
		e.Holder.SessionID, e.Holder.PID, e.Holder.Host, e.Holder.ExpiresAt.Format(time.RFC3339))
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Leases is the lease table.
type Leases interface {
	// AcquireLease gives l.SessionID to l.Owner for ttl, measured from the
	// store's clock, when the session has no lease, its lease is already
	// l.Owner's (a renewal), the lease expired, or it is held by replace (a
	// non-empty owner the caller has found dead). It fills l's times. On
	// refusal it returns a *LeaseHeldError naming the holder.
	// ErrNotFound if the session does not exist.
	AcquireLease(ctx context.Context, l *Lease, ttl time.Duration, replace string) error
	// RenewLeases extends every lease of owner by ttl and returns the
	// session ids it still holds.
	RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]string, error)
	// ReleaseLease drops owner's lease on the session; a lease held by
	// someone else, or none, is left alone.
	ReleaseLease(ctx context.Context, sessionID, owner string) error
	// GetLease returns the session's lease, expired or not; ErrNotFound if
	// there is none.
	GetLease(ctx context.Context, sessionID string) (*Lease, error)
}
