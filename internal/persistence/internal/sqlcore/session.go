package sqlcore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// CreateSession inserts s, setting CreatedAt and UpdatedAt when zero.
func (s *Store) CreateSession(ctx context.Context, sess *persistence.Session) error {
	return s.errorf("create session", s.createSession(ctx, sess))
}

func (s *Store) createSession(ctx context.Context, sess *persistence.Session) error {
	if sess == nil || sess.ID == "" {
		return errors.New("session id is empty")
	}
	meta, err := s.rawJSON("metadata", sess.Metadata)
	if err != nil {
		return err
	}
	t := s.now()
	created, updated := s.orNow(sess.CreatedAt, t), s.orNow(sess.UpdatedAt, t)
	c, err := s.d.Time(created)
	if err != nil {
		return err
	}
	u, err := s.d.Time(updated)
	if err != nil {
		return err
	}
	title := s.d.Text(sess.Title)
	err = s.write(ctx, func(tx conn) error {
		// ON CONFLICT DO NOTHING: a duplicate is an answer, not an aborted
		// statement.
		n, err := tx.Exec(ctx, `
			INSERT INTO sessions (id, cwd, title, created_at, updated_at, metadata)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`,
			sess.ID, sess.Cwd, title, c, u, meta)
		if err == nil && n == 0 {
			err = fmt.Errorf("session %q: %w", sess.ID, persistence.ErrConflict)
		}
		return err
	})
	if err != nil {
		return err
	}
	sess.CreatedAt, sess.UpdatedAt, sess.Title = created, updated, title
	return nil
}

// SessionColumns are the columns every session read selects, in scan order.
const SessionColumns = `id, cwd, title, created_at, updated_at, metadata`

func (s *Store) scanSession(r Row) (persistence.Session, error) {
	var (
		sess persistence.Session
		meta []byte
	)
	if err := r.Scan(&sess.ID, &sess.Cwd, &sess.Title, s.d.ScanTime(&sess.CreatedAt), s.d.ScanTime(&sess.UpdatedAt), &meta); err != nil {
		return sess, err
	}
	sess.CreatedAt, sess.UpdatedAt = sess.CreatedAt.UTC(), sess.UpdatedAt.UTC()
	if meta != nil {
		sess.Metadata = meta
	}
	return sess, nil
}

// GetSession returns the session with the given id.
func (s *Store) GetSession(ctx context.Context, id string) (*persistence.Session, error) {
	sess, err := s.scanSession(s.read().QueryRow(ctx, `SELECT `+SessionColumns+` FROM sessions WHERE id = ?`, id))
	if s.d.IsNoRows(err) {
		return nil, s.errorf(fmt.Sprintf("get session %q", id), persistence.ErrNotFound)
	}
	if err != nil {
		return nil, s.errorf("get session", err)
	}
	return &sess, nil
}

// UpdateSession writes Cwd, Title and Metadata and bumps UpdatedAt.
func (s *Store) UpdateSession(ctx context.Context, sess *persistence.Session) error {
	return s.errorf("update session", s.updateSession(ctx, sess))
}

func (s *Store) updateSession(ctx context.Context, sess *persistence.Session) error {
	if sess == nil {
		return errors.New("nil session")
	}
	meta, err := s.rawJSON("metadata", sess.Metadata)
	if err != nil {
		return err
	}
	t, err := s.d.Time(s.now())
	if err != nil {
		return err
	}
	title := s.d.Text(sess.Title)
	var updated persistence.Session
	err = s.write(ctx, func(tx conn) error {
		return tx.QueryRow(ctx, `
			UPDATE sessions SET cwd = ?, title = ?, metadata = ?, updated_at = {later}
			WHERE id = ?
			RETURNING updated_at`,
			sess.Cwd, title, meta, t, sess.ID).Scan(s.d.ScanTime(&updated.UpdatedAt))
	})
	if s.d.IsNoRows(err) {
		return fmt.Errorf("session %q: %w", sess.ID, persistence.ErrNotFound)
	}
	if err != nil {
		return err
	}
	sess.UpdatedAt, sess.Title = updated.UpdatedAt.UTC(), title
	return nil
}

// ListSessions returns one page of sessions, newest UpdatedAt first, ties
// broken by ascending id, and the cursor of the next page ("" on the last).
func (s *Store) ListSessions(ctx context.Context, opts persistence.ListSessionsOptions) ([]persistence.Session, string, error) {
	list, next, err := s.listSessions(ctx, opts)
	if err != nil {
		return nil, "", s.errorf("list sessions", err)
	}
	return list, next, nil
}

func (s *Store) listSessions(ctx context.Context, opts persistence.ListSessionsOptions) ([]persistence.Session, string, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = persistence.DefaultListLimit
	}
	limit = min(limit, persistence.MaxListLimit)

	// Only fixed SQL fragments are concatenated; every value is a parameter.
	q := `SELECT ` + SessionColumns + ` FROM sessions WHERE 1 = 1`
	var args []any
	if opts.Cwd != "" {
		q += ` AND cwd = ?`
		args = append(args, opts.Cwd)
	}
	if opts.Cursor != "" {
		key, id, err := DecodeCursor(opts.Cursor)
		if err != nil {
			return nil, "", err
		}
		at, err := s.d.Time(s.d.FromCursorKey(key))
		if err != nil {
			return nil, "", persistence.ErrInvalidCursor
		}
		q += ` AND (updated_at < ? OR (updated_at = ? AND id > ?))`
		args = append(args, at, at, id)
	}
	q += ` ORDER BY updated_at DESC, id ASC LIMIT ?`
	args = append(args, limit+1) // one more tells whether a next page exists

	rows, err := s.read().Query(ctx, q, args...)
	list, err := collect(rows, err, s.scanSession)
	if err != nil {
		return nil, "", err
	}
	if len(list) <= limit {
		return list, "", nil
	}
	list = list[:limit]
	last := list[limit-1]
	return list, EncodeCursor(s.d.CursorKey(last.UpdatedAt), last.ID), nil
}

// A cursor is the keyset of the last session of a page, "1:<updated_at
// key>:<id>" in unpadded URL-safe base64 (the key is the dialect's: unix
// nanoseconds or microseconds). The leading version leaves room for another
// format.
func EncodeCursor(updatedAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString(
		[]byte("1:" + strconv.FormatInt(updatedAt, 10) + ":" + id))
}

// DecodeCursor is the inverse of EncodeCursor; persistence.ErrInvalidCursor
// for text it did not produce.
func DecodeCursor(c string) (updatedAt int64, id string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", persistence.ErrInvalidCursor
	}
	version, rest, ok := strings.Cut(string(b), ":")
	if !ok || version != "1" {
		return 0, "", persistence.ErrInvalidCursor
	}
	at, id, ok := strings.Cut(rest, ":")
	if !ok || id == "" {
		return 0, "", persistence.ErrInvalidCursor
	}
	updatedAt, err = strconv.ParseInt(at, 10, 64)
	if err != nil {
		return 0, "", persistence.ErrInvalidCursor
	}
	return updatedAt, id, nil
}

// DeleteSession removes a session with everything it owns (ON DELETE
// CASCADE). Deleting an unknown id is not an error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx conn) error {
		_, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		return err
	})
	return s.errorf("delete session", err)
}
