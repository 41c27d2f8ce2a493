package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/persistence"
)

// CreateSession inserts s, setting CreatedAt and UpdatedAt when zero.
func (s *Store) CreateSession(ctx context.Context, sess *persistence.Session) error {
	if err := s.createSession(ctx, sess); err != nil {
		return fmt.Errorf("sqlite: create session: %w", err)
	}
	return nil
}

func (s *Store) createSession(ctx context.Context, sess *persistence.Session) error {
	if sess == nil || sess.ID == "" {
		return errors.New("session id is empty")
	}
	meta, err := rawJSON("metadata", sess.Metadata)
	if err != nil {
		return err
	}
	t := now()
	created, updated := sess.CreatedAt, sess.UpdatedAt
	if created.IsZero() {
		created = t
	}
	if updated.IsZero() {
		updated = t
	}
	c, err := nanos(created)
	if err != nil {
		return err
	}
	u, err := nanos(updated)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO sessions (id, cwd, title, created_at, updated_at, metadata)
			VALUES (?, ?, ?, ?, ?, ?)`,
			sess.ID, sess.Cwd, sess.Title, c, u, meta)
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("session %q: %w", sess.ID, persistence.ErrConflict)
	}
	if err != nil {
		return err
	}
	sess.CreatedAt, sess.UpdatedAt = created, updated
	return nil
}

const sessionColumns = `id, cwd, title, created_at, updated_at, metadata`

type scanner interface{ Scan(dest ...any) error }

func scanSession(r scanner) (persistence.Session, error) {
	var (
		sess persistence.Session
		c, u int64
		meta []byte
	)
	if err := r.Scan(&sess.ID, &sess.Cwd, &sess.Title, &c, &u, &meta); err != nil {
		return sess, err
	}
	sess.CreatedAt, sess.UpdatedAt = fromNanos(c), fromNanos(u)
	if meta != nil {
		sess.Metadata = meta
	}
	return sess, nil
}

// GetSession returns the session with the given id.
func (s *Store) GetSession(ctx context.Context, id string) (*persistence.Session, error) {
	row := s.rdb.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id)
	sess, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: get session %q: %w", id, persistence.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get session: %w", err)
	}
	return &sess, nil
}

// UpdateSession writes Cwd, Title and Metadata and bumps UpdatedAt.
func (s *Store) UpdateSession(ctx context.Context, sess *persistence.Session) error {
	if err := s.updateSession(ctx, sess); err != nil {
		return fmt.Errorf("sqlite: update session: %w", err)
	}
	return nil
}

func (s *Store) updateSession(ctx context.Context, sess *persistence.Session) error {
	if sess == nil {
		return errors.New("nil session")
	}
	meta, err := rawJSON("metadata", sess.Metadata)
	if err != nil {
		return err
	}
	t, err := nanos(now())
	if err != nil {
		return err
	}
	var updated int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `
			UPDATE sessions
			SET cwd = ?, title = ?, metadata = ?, updated_at = MAX(updated_at + 1, ?)
			WHERE id = ?
			RETURNING updated_at`,
			sess.Cwd, sess.Title, meta, t, sess.ID).Scan(&updated)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session %q: %w", sess.ID, persistence.ErrNotFound)
	}
	if err != nil {
		return err
	}
	sess.UpdatedAt = fromNanos(updated)
	return nil
}

// ListSessions returns one page of sessions, newest UpdatedAt first, ties
// broken by ascending id, and the cursor of the next page ("" on the last).
func (s *Store) ListSessions(ctx context.Context, opts persistence.ListSessionsOptions) ([]persistence.Session, string, error) {
	list, next, err := s.listSessions(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list sessions: %w", err)
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
	q := `SELECT ` + sessionColumns + ` FROM sessions WHERE 1 = 1`
	var args []any
	if opts.Cwd != "" {
		q += ` AND cwd = ?`
		args = append(args, opts.Cwd)
	}
	if opts.Cursor != "" {
		at, id, err := decodeCursor(opts.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (updated_at < ? OR (updated_at = ? AND id > ?))`
		args = append(args, at, at, id)
	}
	q += ` ORDER BY updated_at DESC, id ASC LIMIT ?`
	args = append(args, limit+1) // one more tells whether a next page exists

	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	list := make([]persistence.Session, 0, min(limit, 64))
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, "", err
		}
		list = append(list, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if len(list) <= limit {
		return list, "", nil
	}
	list = list[:limit]
	last := list[limit-1]
	return list, encodeCursor(last.UpdatedAt.UnixNano(), last.ID), nil
}

// A cursor is the keyset of the last session of a page, "1:<updated_at
// nanos>:<id>" in unpadded URL-safe base64. The leading version leaves room
// for another format.
func encodeCursor(updatedAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString(
		[]byte("1:" + strconv.FormatInt(updatedAt, 10) + ":" + id))
}

func decodeCursor(c string) (updatedAt int64, id string, err error) {
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

// DeleteSession removes a session with its messages and compactions.
// Deleting an unknown id is not an error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete session: %w", err)
	}
	return nil
}
