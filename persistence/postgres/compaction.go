package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/persistence"
)

const compactionColumns = `id, policy, compacted_ids, kept_ids, tokens_before, tokens_after,
	summary_message_id, settings, created_at, added_ids, messages_before, messages_after, expanded`

func scanCompaction(row pgx.Row, sessionID string) (*persistence.Compaction, error) {
	var (
		c                              persistence.Compaction
		settings                       []byte
		before, after, mBefore, mAfter int64
	)
	if err := row.Scan(&c.ID, &c.Policy, &c.CompactedIDs, &c.KeptIDs, &before, &after,
		&c.SummaryMessageID, &settings, &c.CreatedAt, &c.AddedIDs, &mBefore, &mAfter, &c.Expanded); err != nil {
		return nil, err
	}
	c.SessionID = sessionID
	c.TokensBefore, c.TokensAfter = int(before), int(after)
	c.MessagesBefore, c.MessagesAfter = int(mBefore), int(mAfter)
	if settings != nil {
		c.Settings = json.RawMessage(settings)
	}
	c.CreatedAt = c.CreatedAt.UTC()
	return &c, nil
}

// Compact appends added, stores c and marks c.CompactedIDs inactive, in one
// transaction.
func (s *Store) Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	if err := s.compact(ctx, c, added); err != nil {
		return fmt.Errorf("postgres: compact: %w", err)
	}
	return nil
}

func (s *Store) compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	if c == nil {
		return errors.New("nil compaction")
	}
	t := now()
	createdAt := stored(c.CreatedAt)
	if c.CreatedAt.IsZero() {
		createdAt = t
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
	distinct := distinctIDs(c.CompactedIDs)

	var compactionID int64
	var summaryID *int64
	var addedIDs []int64
	var first int64
	err = s.write(ctx, func(tx pgx.Tx) error {
		last, err := bumpSession(ctx, tx, c.SessionID, len(rows), t)
		if err != nil {
			return err
		}
		first = last - int64(len(rows)) + 1
		if len(rows) > 0 {
			if addedIDs, err = insertRows(ctx, tx, c.SessionID, rows, first); err != nil {
				return fmt.Errorf("added %w", err)
			}
			for i := range rows {
				if rows[i].m.Role == persistence.RoleSummary {
					id := addedIDs[i]
					summaryID = &id
					break
				}
			}
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO compactions (session_id, policy, compacted_ids, kept_ids,
				tokens_before, tokens_after, summary_message_id, settings, created_at,
				added_ids, messages_before, messages_after)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			RETURNING id`,
			c.SessionID, c.Policy, c.CompactedIDs, c.KeptIDs, c.TokensBefore, c.TokensAfter,
			summaryID, settings, createdAt, addedIDs, c.MessagesBefore, c.MessagesAfter).Scan(&compactionID); err != nil {
			return err
		}
		change := func() error {
			return recordChange(ctx, tx, c.SessionID, append(append([]int64(nil), addedIDs...), c.CompactedIDs...), nil, compactionID, false, t)
		}
		if len(distinct) == 0 {
			return change()
		}
		tag, err := tx.Exec(ctx, `
			UPDATE messages SET is_active = false, compacted_into_id = $1
			WHERE session_id = $2 AND id = ANY($3)`,
			compactionID, c.SessionID, distinct)
		if err != nil {
			return err
		}
		if changed := tag.RowsAffected(); changed != int64(len(distinct)) {
			return fmt.Errorf("%d of the compacted ids are not messages of session %q: %w",
				int64(len(distinct))-changed, c.SessionID, persistence.ErrNotFound)
		}
		return change()
	})
	if err != nil {
		return err
	}
	c.ID, c.CreatedAt, c.SummaryMessageID, c.Expanded = compactionID, createdAt, summaryID, false
	c.AddedIDs = addedIDs
	for i := range rows {
		rows[i].fill(c.SessionID, addedIDs[i], first+int64(i))
	}
	return nil
}

// Compaction returns one record of a session.
func (s *Store) Compaction(ctx context.Context, sessionID string, id int64) (*persistence.Compaction, error) {
	c, err := getCompaction(ctx, s.pool, sessionID, id, false)
	if err != nil {
		return nil, fmt.Errorf("postgres: compaction: %w", err)
	}
	return c, nil
}

// getCompaction loads a record; lock takes the session's row lock first, so
// undo operations on one session run one at a time.
func getCompaction(ctx context.Context, q querier, sessionID string, id int64, lock bool) (*persistence.Compaction, error) {
	if lock {
		var one int
		err := q.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, sessionID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("compaction %d of session %q: %w", id, sessionID, persistence.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
	}
	c, err := scanCompaction(q.QueryRow(ctx, `SELECT `+compactionColumns+` FROM compactions WHERE session_id = $1 AND id = $2`, sessionID, id), sessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("compaction %d of session %q: %w", id, sessionID, persistence.ErrNotFound)
	}
	return c, err
}

func countActive(ctx context.Context, tx pgx.Tx, sessionID string, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM messages WHERE session_id = $1 AND is_active AND id = ANY($2)`,
		sessionID, ids).Scan(&n)
	return n, err
}

func setActive(ctx context.Context, tx pgx.Tx, sessionID string, ids []int64, active bool, into *int64) error {
	if len(ids) == 0 {
		return nil
	}
	var err error
	if into != nil {
		_, err = tx.Exec(ctx, `UPDATE messages SET is_active = $1, compacted_into_id = $2 WHERE session_id = $3 AND id = ANY($4)`,
			active, *into, sessionID, ids)
	} else {
		_, err = tx.Exec(ctx, `UPDATE messages SET is_active = $1 WHERE session_id = $2 AND id = ANY($3)`,
			active, sessionID, ids)
	}
	return err
}

// expandable checks that c is collapsed and no later compaction covers the
// messages it added.
func expandable(ctx context.Context, tx pgx.Tx, c *persistence.Compaction) error {
	if c.Expanded {
		return fmt.Errorf("compaction %d is already expanded: %w", c.ID, persistence.ErrConflict)
	}
	n, err := countActive(ctx, tx, c.SessionID, c.AddedIDs)
	if err != nil {
		return err
	}
	if n != len(c.AddedIDs) {
		return fmt.Errorf("compaction %d is covered by a later compaction; expand that one first: %w", c.ID, persistence.ErrConflict)
	}
	return nil
}

// ExpandCompaction re-activates a compaction's originals and hides what it
// added.
func (s *Store) ExpandCompaction(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		c, err := getCompaction(ctx, tx, sessionID, id, true)
		if err != nil {
			return err
		}
		if err := expandable(ctx, tx, c); err != nil {
			return err
		}
		if err := setActive(ctx, tx, sessionID, c.CompactedIDs, true, nil); err != nil {
			return err
		}
		if err := setActive(ctx, tx, sessionID, c.AddedIDs, false, nil); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE compactions SET expanded = true WHERE id = $1`, id); err != nil {
			return err
		}
		return recordChange(ctx, tx, sessionID, append(append([]int64(nil), c.CompactedIDs...), c.AddedIDs...), nil, id, false, now())
	})
	if err != nil {
		return fmt.Errorf("postgres: expand compaction: %w", err)
	}
	return nil
}

// CollapseCompaction undoes ExpandCompaction.
func (s *Store) CollapseCompaction(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		c, err := getCompaction(ctx, tx, sessionID, id, true)
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
		if _, err := tx.Exec(ctx, `UPDATE compactions SET expanded = false WHERE id = $1`, id); err != nil {
			return err
		}
		return recordChange(ctx, tx, sessionID, append(append([]int64(nil), c.CompactedIDs...), c.AddedIDs...), nil, id, false, now())
	})
	if err != nil {
		return fmt.Errorf("postgres: collapse compaction: %w", err)
	}
	return nil
}

// DeleteCompaction undoes a compaction for good.
func (s *Store) DeleteCompaction(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		c, err := getCompaction(ctx, tx, sessionID, id, true)
		if err != nil {
			return err
		}
		if !c.Expanded {
			if err := expandable(ctx, tx, c); err != nil {
				return err
			}
			if err := setActive(ctx, tx, sessionID, c.CompactedIDs, true, nil); err != nil {
				return err
			}
		}
		if len(c.AddedIDs) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE session_id = $1 AND id = ANY($2)`, sessionID, c.AddedIDs); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM compactions WHERE id = $1`, id); err != nil {
			return err
		}
		return recordChange(ctx, tx, sessionID, c.CompactedIDs, c.AddedIDs, id, true, now())
	})
	if err != nil {
		return fmt.Errorf("postgres: delete compaction: %w", err)
	}
	return nil
}

// SetTokenCounts caches token counts for one encoding.
func (s *Store) SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error {
	ids := make([]int64, 0, len(counts))
	ns := make([]int64, 0, len(counts))
	for id, n := range counts {
		ids = append(ids, id)
		ns = append(ns, int64(n))
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		ok, err := s.sessionExists(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
		if len(ids) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `
			UPDATE messages SET token_count = u.n, token_encoding = $1
			FROM unnest($2::bigint[], $3::bigint[]) AS u(id, n)
			WHERE messages.session_id = $4 AND messages.id = u.id`, encoding, ids, ns, sessionID)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: set token counts: %w", err)
	}
	return nil
}
