package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/internal/jsoncol"
)

const compactionColumns = `id, policy, compacted_ids, kept_ids, tokens_before, tokens_after,
	summary_message_id, settings, created_at, added_ids, messages_before, messages_after, expanded`

func scanCompaction(row scanner, sessionID string) (*persistence.Compaction, error) {
	var (
		c                      persistence.Compaction
		compacted, kept, added []byte
		settings               []byte
		summary                sql.NullInt64
		created                int64
		expanded               int
	)
	if err := row.Scan(&c.ID, &c.Policy, &compacted, &kept, &c.TokensBefore,
		&c.TokensAfter, &summary, &settings, &created, &added, &c.MessagesBefore,
		&c.MessagesAfter, &expanded); err != nil {
		return nil, err
	}
	var err error
	c.SessionID = sessionID
	if c.CompactedIDs, err = jsoncol.DecodeSlice[int64]("compacted ids", compacted); err != nil {
		return nil, fmt.Errorf("compaction %d: %w", c.ID, err)
	}
	if c.KeptIDs, err = jsoncol.DecodeSlice[int64]("kept ids", kept); err != nil {
		return nil, fmt.Errorf("compaction %d: %w", c.ID, err)
	}
	if c.AddedIDs, err = jsoncol.DecodeSlice[int64]("added ids", added); err != nil {
		return nil, fmt.Errorf("compaction %d: %w", c.ID, err)
	}
	if summary.Valid {
		c.SummaryMessageID = &summary.Int64
	}
	if settings != nil {
		c.Settings = json.RawMessage(settings)
	}
	c.CreatedAt = fromNanos(created)
	c.Expanded = expanded == 1
	return &c, nil
}

// Compact appends added, stores c and marks c.CompactedIDs inactive, in one
// transaction.
func (s *Store) Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	if err := s.compact(ctx, c, added); err != nil {
		return fmt.Errorf("sqlite: compact: %w", err)
	}
	return nil
}

func (s *Store) compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	if c == nil {
		return errors.New("nil compaction")
	}
	t := now()
	at, err := nanos(t)
	if err != nil {
		return err
	}
	createdAt := c.CreatedAt
	if createdAt.IsZero() {
		createdAt = t
	}
	created, err := nanos(createdAt)
	if err != nil {
		return err
	}
	compacted, err := jsoncol.Slice("compacted ids", c.CompactedIDs)
	if err != nil {
		return err
	}
	kept, err := jsoncol.Slice("kept ids", c.KeptIDs)
	if err != nil {
		return err
	}
	settings, err := rawJSON("settings", c.Settings)
	if err != nil {
		return err
	}
	rows := make([]messageRow, len(added))
	for i, m := range added {
		if rows[i], err = encodeMessage(c.SessionID, m, t); err != nil {
			return fmt.Errorf("added message %d: %w", i, err)
		}
	}
	// The distinct ids to mark, as a JSON array for json_each: one
	// parameter whatever the count.
	distinct := make(map[int64]struct{}, len(c.CompactedIDs))
	for _, id := range c.CompactedIDs {
		distinct[id] = struct{}{}
	}
	var idsJSON any = "[]"
	if compacted != nil {
		idsJSON = compacted
	}

	var compactionID int64
	var summaryID *int64
	addedIDs := make([]int64, len(rows))
	var first int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		last, err := bumpSession(ctx, tx, c.SessionID, len(rows), at)
		if err != nil {
			return err
		}
		first = last - int64(len(rows)) + 1
		for i := range rows {
			if addedIDs[i], err = rows[i].insert(ctx, tx, c.SessionID, first+int64(i)); err != nil {
				return fmt.Errorf("added message %d: %w", i, err)
			}
			if summaryID == nil && rows[i].m.Role == persistence.RoleSummary {
				id := addedIDs[i]
				summaryID = &id
			}
		}
		var addedJSON any
		if len(rows) > 0 {
			b, _ := json.Marshal(addedIDs)
			addedJSON = string(b)
		}
		res, err := tx.ExecContext(ctx, `
			INSERT INTO compactions (session_id, policy, compacted_ids, kept_ids,
				tokens_before, tokens_after, summary_message_id, settings, created_at,
				added_ids, messages_before, messages_after)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.SessionID, c.Policy, compacted, kept, c.TokensBefore, c.TokensAfter,
			summaryID, settings, created, addedJSON, c.MessagesBefore, c.MessagesAfter)
		if err != nil {
			return err
		}
		if compactionID, err = res.LastInsertId(); err != nil {
			return err
		}
		change := func() error {
			return recordChange(ctx, tx, c.SessionID, append(append([]int64(nil), addedIDs...), c.CompactedIDs...), nil, compactionID, false, t)
		}
		if len(distinct) == 0 {
			return change()
		}
		res, err = tx.ExecContext(ctx, `
			UPDATE messages SET is_active = 0, compacted_into_id = ?
			WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))`,
			compactionID, c.SessionID, idsJSON)
		if err != nil {
			return err
		}
		changed, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if changed != int64(len(distinct)) {
			return fmt.Errorf("%d of the compacted ids are not messages of session %q: %w",
				int64(len(distinct))-changed, c.SessionID, persistence.ErrNotFound)
		}
		return change()
	})
	if err != nil {
		return err
	}
	c.ID, c.CreatedAt, c.SummaryMessageID, c.Expanded = compactionID, createdAt, summaryID, false
	c.AddedIDs = nil
	if len(rows) > 0 {
		c.AddedIDs = addedIDs
	}
	for i := range rows {
		rows[i].fill(c.SessionID, addedIDs[i], first+int64(i))
	}
	return nil
}

// Compaction returns one record of a session.
func (s *Store) Compaction(ctx context.Context, sessionID string, id int64) (*persistence.Compaction, error) {
	c, err := getCompaction(ctx, s.rdb, sessionID, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: compaction: %w", err)
	}
	return c, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getCompaction(ctx context.Context, q querier, sessionID string, id int64) (*persistence.Compaction, error) {
	row := q.QueryRowContext(ctx, `SELECT `+compactionColumns+` FROM compactions WHERE session_id = ? AND id = ?`, sessionID, id)
	c, err := scanCompaction(row, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("compaction %d of session %q: %w", id, sessionID, persistence.ErrNotFound)
	}
	return c, err
}

// countActive counts how many of ids are active messages of the session.
func countActive(ctx context.Context, tx *sql.Tx, sessionID string, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	b, _ := json.Marshal(ids)
	var n int
	err := tx.QueryRowContext(ctx, `
		SELECT COUNT(*) FROM messages
		WHERE session_id = ? AND is_active = 1 AND id IN (SELECT value FROM json_each(?))`,
		sessionID, string(b)).Scan(&n)
	return n, err
}

// setActive sets is_active on ids; compacted_into_id is set to into when
// into is non-nil and left alone otherwise.
func setActive(ctx context.Context, tx *sql.Tx, sessionID string, ids []int64, active bool, into *int64) error {
	if len(ids) == 0 {
		return nil
	}
	b, _ := json.Marshal(ids)
	v := 0
	if active {
		v = 1
	}
	q := `UPDATE messages SET is_active = ? WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))`
	args := []any{v, sessionID, string(b)}
	if into != nil {
		q = `UPDATE messages SET is_active = ?, compacted_into_id = ? WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))`
		args = []any{v, *into, sessionID, string(b)}
	}
	_, err := tx.ExecContext(ctx, q, args...)
	return err
}

// ExpandCompaction re-activates a compaction's originals and hides what it
// added.
func (s *Store) ExpandCompaction(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		c, err := s.expandable(ctx, tx, sessionID, id)
		if err != nil {
			return err
		}
		if err := setActive(ctx, tx, sessionID, c.CompactedIDs, true, nil); err != nil {
			return err
		}
		if err := setActive(ctx, tx, sessionID, c.AddedIDs, false, nil); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE compactions SET expanded = 1 WHERE id = ?`, id); err != nil {
			return err
		}
		return recordChange(ctx, tx, sessionID, append(append([]int64(nil), c.CompactedIDs...), c.AddedIDs...), nil, id, false, now())
	})
	if err != nil {
		return fmt.Errorf("sqlite: expand compaction: %w", err)
	}
	return nil
}

// expandable loads a collapsed compaction whose added messages are all still
// active (no later compaction covers them).
func (s *Store) expandable(ctx context.Context, tx *sql.Tx, sessionID string, id int64) (*persistence.Compaction, error) {
	c, err := getCompaction(ctx, tx, sessionID, id)
	if err != nil {
		return nil, err
	}
	if c.Expanded {
		return nil, fmt.Errorf("compaction %d is already expanded: %w", id, persistence.ErrConflict)
	}
	n, err := countActive(ctx, tx, sessionID, c.AddedIDs)
	if err != nil {
		return nil, err
	}
	if n != len(c.AddedIDs) {
		return nil, fmt.Errorf("compaction %d is covered by a later compaction; expand that one first: %w", id, persistence.ErrConflict)
	}
	return c, nil
}

// CollapseCompaction undoes ExpandCompaction.
func (s *Store) CollapseCompaction(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		c, err := getCompaction(ctx, tx, sessionID, id)
		if err != nil {
			return err
		}
		if !c.Expanded {
			return fmt.Errorf("compaction %d is not expanded: %w", id, persistence.ErrConflict)
		}
		n, err := countActive(ctx, tx, sessionID, c.CompactedIDs)
		if err != nil {
			return err
		}
		if n != len(distinctIDs(c.CompactedIDs)) {
			return fmt.Errorf("some messages of compaction %d were compacted again since it was expanded: %w", id, persistence.ErrConflict)
		}
		if err := setActive(ctx, tx, sessionID, c.CompactedIDs, false, &c.ID); err != nil {
			return err
		}
		if err := setActive(ctx, tx, sessionID, c.AddedIDs, true, nil); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE compactions SET expanded = 0 WHERE id = ?`, id); err != nil {
			return err
		}
		return recordChange(ctx, tx, sessionID, append(append([]int64(nil), c.CompactedIDs...), c.AddedIDs...), nil, id, false, now())
	})
	if err != nil {
		return fmt.Errorf("sqlite: collapse compaction: %w", err)
	}
	return nil
}

// DeleteCompaction undoes a compaction for good.
func (s *Store) DeleteCompaction(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		c, err := getCompaction(ctx, tx, sessionID, id)
		if err != nil {
			return err
		}
		if !c.Expanded {
			if _, err := s.expandable(ctx, tx, sessionID, id); err != nil {
				return err
			}
			if err := setActive(ctx, tx, sessionID, c.CompactedIDs, true, nil); err != nil {
				return err
			}
		}
		if len(c.AddedIDs) > 0 {
			b, _ := json.Marshal(c.AddedIDs)
			if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))`,
				sessionID, string(b)); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM compactions WHERE id = ?`, id); err != nil {
			return err
		}
		return recordChange(ctx, tx, sessionID, c.CompactedIDs, c.AddedIDs, id, true, now())
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete compaction: %w", err)
	}
	return nil
}

func distinctIDs(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// SetTokenCounts caches token counts for one encoding.
func (s *Store) SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
		if err != nil {
			return err
		}
		for id, n := range counts {
			if _, err := tx.ExecContext(ctx, `UPDATE messages SET token_count = ?, token_encoding = ? WHERE session_id = ? AND id = ?`,
				n, encoding, sessionID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: set token counts: %w", err)
	}
	return nil
}
