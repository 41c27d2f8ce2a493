package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

const leaseColumns = `session_id, owner, pid, host, generation, acquired_at, heartbeat_at, expires_at`

func (s *Store) scanLease(r Row) (persistence.Lease, error) {
	var l persistence.Lease
	err := r.Scan(&l.SessionID, &l.Owner, &l.PID, &l.Host, &l.Generation,
		s.d.ScanTime(&l.AcquiredAt), s.d.ScanTime(&l.HeartbeatAt), s.d.ScanTime(&l.ExpiresAt))
	l.AcquiredAt, l.HeartbeatAt, l.ExpiresAt = l.AcquiredAt.UTC(), l.HeartbeatAt.UTC(), l.ExpiresAt.UTC()
	return l, err
}

// checkFence refuses, inside tx, a write whose lease is no longer the
// session's live lease. With row locks it locks the session row first, as
// AcquireLease does, so a takeover and this write are ordered; without, the
// transaction excludes every other writer until it commits.
func (s *Store) checkFence(ctx context.Context, tx conn, f persistence.Fence) error {
	lost := fmt.Errorf("session %s, lease generation %d: %w", f.SessionID, f.Generation, persistence.ErrLeaseLost)
	if s.d.RowLocks {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = ?{for_no_key_update}`, f.SessionID).Scan(&one)
		if s.d.IsNoRows(err) {
			return lost
		}
		if err != nil {
			return err
		}
	}
	at, err := s.d.Time(s.now())
	if err != nil {
		return err
	}
	var one int
	err = tx.QueryRow(ctx, `
		SELECT 1 FROM session_leases
		WHERE session_id = ? AND owner = ? AND generation = ? AND expires_at > ?`,
		f.SessionID, f.Owner, f.Generation, at).Scan(&one)
	if s.d.IsNoRows(err) {
		return lost
	}
	return err
}

// AcquireLease grants or renews the session's lease, or reports its holder.
func (s *Store) AcquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	return s.errorf("acquire lease", s.acquireLease(ctx, l, ttl, replace))
}

func (s *Store) acquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	if l == nil || l.SessionID == "" || l.Owner == "" {
		return errors.New("session id and owner are required")
	}
	if ttl <= 0 {
		return errors.New("ttl must be positive")
	}
	t := s.now()
	now, err := s.d.Time(t)
	if err != nil {
		return err
	}
	exp, err := s.d.Time(s.d.Stored(t.Add(ttl)))
	if err != nil {
		return err
	}
	var (
		got       persistence.Lease
		abandoned bool
	)
	err = s.transact(ctx, func(tx conn) error {
		// Acquirers of one session queue on its row lock.
		notFound := fmt.Errorf("session %q: %w", l.SessionID, persistence.ErrNotFound)
		if s.d.RowLocks {
			if err := s.lockSession(ctx, tx, l.SessionID, notFound); err != nil {
				return err
			}
		} else if err := s.requireSession(ctx, tx, l.SessionID); err != nil {
			return err
		}
		var generation int64
		acquired := now
		cur, err := s.scanLease(tx.QueryRow(ctx, `SELECT `+leaseColumns+` FROM session_leases WHERE session_id = ?`, l.SessionID))
		abandoned = err == nil && cur.Owner != ""
		switch {
		case s.d.IsNoRows(err):
		case err != nil:
			return err
		case !cur.ExpiresAt.After(t), replace != "" && cur.Owner == replace:
			// Expired or released, or its holder is known to be dead:
			// take it over.
			generation = cur.Generation
		case cur.Owner == l.Owner:
			// Taken again by its live holder: it keeps the original
			// acquisition time, and its earlier writes are fenced off.
			generation = cur.Generation
			if acquired, err = s.d.Time(cur.AcquiredAt); err != nil {
				return err
			}
		default:
			return &persistence.LeaseHeldError{Holder: cur}
		}
		got, err = s.scanLease(tx.QueryRow(ctx, `
			INSERT INTO session_leases (`+leaseColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, pid = excluded.pid,
				host = excluded.host, generation = excluded.generation, acquired_at = excluded.acquired_at,
				heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
			RETURNING `+leaseColumns,
			l.SessionID, l.Owner, l.PID, l.Host, generation+1, acquired, now, exp))
		return err
	})
	if err != nil {
		return err
	}
	*l = got
	l.Abandoned = abandoned
	return nil
}

// RenewLeases extends all of owner's live leases by ttl.
func (s *Store) RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]string, error) {
	t := s.now()
	now, err := s.d.Time(t)
	if err != nil {
		return nil, s.errorf("renew leases", err)
	}
	exp, err := s.d.Time(s.d.Stored(t.Add(ttl)))
	if err != nil {
		return nil, s.errorf("renew leases", err)
	}
	var ids []string
	err = s.transact(ctx, func(tx conn) error {
		rows, err := tx.Query(ctx, `
			UPDATE session_leases SET heartbeat_at = ?, expires_at = ?
			WHERE owner = ? AND expires_at > ? RETURNING session_id`, now, exp, owner, now)
		ids, err = collect(rows, err, func(r Row) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		return err
	})
	if err != nil {
		return nil, s.errorf("renew leases", err)
	}
	return ids, nil
}

// ReleaseLease ends owner's live lease on the session; the row stays, with
// no owner, so that the generation keeps rising.
func (s *Store) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	now, err := s.d.Time(s.now())
	if err == nil {
		err = s.transact(ctx, func(tx conn) error {
			_, err := tx.Exec(ctx, `
				UPDATE session_leases SET owner = '', expires_at = ?
				WHERE session_id = ? AND owner = ? AND expires_at > ?`, now, sessionID, owner, now)
			return err
		})
	}
	return s.errorf("release lease", err)
}

// GetLease returns the session's lease.
func (s *Store) GetLease(ctx context.Context, sessionID string) (*persistence.Lease, error) {
	l, err := s.scanLease(s.read().QueryRow(ctx, `SELECT `+leaseColumns+` FROM session_leases WHERE session_id = ?`, sessionID))
	if s.d.IsNoRows(err) {
		return nil, s.errorf(fmt.Sprintf("get lease %q", sessionID), persistence.ErrNotFound)
	}
	if err != nil {
		return nil, s.errorf("get lease", err)
	}
	return &l, nil
}
