package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/persistence"
)

const leaseColumns = `session_id, owner, pid, host, acquired_at, heartbeat_at, expires_at`

func scanLease(r pgx.Row) (persistence.Lease, error) {
	var l persistence.Lease
	var pid int64
	err := r.Scan(&l.SessionID, &l.Owner, &pid, &l.Host, &l.AcquiredAt, &l.HeartbeatAt, &l.ExpiresAt)
	l.PID = int(pid)
	l.AcquiredAt, l.HeartbeatAt, l.ExpiresAt = l.AcquiredAt.UTC(), l.HeartbeatAt.UTC(), l.ExpiresAt.UTC()
	return l, err
}

// AcquireLease grants or renews the session's lease, or reports its holder.
func (s *Store) AcquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	if err := s.acquireLease(ctx, l, ttl, replace); err != nil {
		return fmt.Errorf("postgres: acquire lease: %w", classify(err))
	}
	return nil
}

func (s *Store) acquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	if l == nil || l.SessionID == "" || l.Owner == "" {
		return errors.New("session id and owner are required")
	}
	if ttl <= 0 {
		return errors.New("ttl must be positive")
	}
	t := now()
	exp := stored(t.Add(ttl))
	var got persistence.Lease
	err := s.write(ctx, func(tx pgx.Tx) error {
		// Lock the session row: acquirers of one session queue here.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, l.SessionID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("session %q: %w", l.SessionID, persistence.ErrNotFound)
		}
		if err != nil {
			return err
		}
		acquired := t
		cur, err := scanLease(tx.QueryRow(ctx, `SELECT `+leaseColumns+` FROM session_leases WHERE session_id = $1`, l.SessionID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case cur.Owner == l.Owner:
			acquired = cur.AcquiredAt
		case cur.ExpiresAt.Before(t), replace != "" && cur.Owner == replace:
		default:
			return &persistence.LeaseHeldError{Holder: cur}
		}
		got, err = scanLease(tx.QueryRow(ctx, `
			INSERT INTO session_leases (`+leaseColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, pid = excluded.pid,
				host = excluded.host, acquired_at = excluded.acquired_at,
				heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
			RETURNING `+leaseColumns,
			l.SessionID, l.Owner, l.PID, l.Host, acquired, t, exp))
		return err
	})
	if err != nil {
		return err
	}
	*l = got
	return nil
}

// RenewLeases extends all of owner's leases by ttl.
func (s *Store) RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]string, error) {
	t := now()
	var ids []string
	err := s.write(ctx, func(tx pgx.Tx) error {
		ids = ids[:0]
		rows, err := tx.Query(ctx, `
			UPDATE session_leases SET heartbeat_at = $1, expires_at = $2
			WHERE owner = $3 RETURNING session_id`, t, stored(t.Add(ttl)), owner)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: renew leases: %w", classify(err))
	}
	return ids, nil
}

// ReleaseLease drops owner's lease on the session.
func (s *Store) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM session_leases WHERE session_id = $1 AND owner = $2`, sessionID, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: release lease: %w", classify(err))
	}
	return nil
}

// GetLease returns the session's lease.
func (s *Store) GetLease(ctx context.Context, sessionID string) (*persistence.Lease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, `SELECT `+leaseColumns+` FROM session_leases WHERE session_id = $1`, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: get lease %q: %w", sessionID, persistence.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get lease: %w", err)
	}
	return &l, nil
}
