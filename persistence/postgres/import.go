package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/persistence"
)

// ImportSession stores a whole session exactly as d has it, in one
// transaction, with new ids. Times are truncated to the microsecond, in d
// too.
func (s *Store) ImportSession(ctx context.Context, d *persistence.SessionDump) error {
	if err := s.importSession(ctx, d); err != nil {
		return fmt.Errorf("postgres: import session: %w", err)
	}
	return nil
}

func (s *Store) importSession(ctx context.Context, d *persistence.SessionDump) error {
	if err := d.Check(); err != nil {
		return err
	}
	sess := d.Session
	meta, err := rawJSON("metadata", sess.Metadata)
	if err != nil {
		return err
	}
	rows := make([]messageRow, len(d.Messages))
	for i := range d.Messages {
		m := &d.Messages[i]
		if rows[i], err = encodeMessage(sess.ID, m, m.CreatedAt); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	settings := make([]any, len(d.Compactions))
	for i, c := range d.Compactions {
		if settings[i], err = rawJSON("settings", c.Settings); err != nil {
			return fmt.Errorf("compaction %d: %w", i, err)
		}
	}

	msgIDs := make([]int64, len(rows))
	compIDs := make([]int64, len(d.Compactions))
	err = s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO sessions (id, cwd, title, created_at, updated_at, metadata, last_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (id) DO NOTHING`,
			sess.ID, sess.Cwd, persistence.ValidText(sess.Title), stored(sess.CreatedAt), stored(sess.UpdatedAt), meta, d.LastSeq())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("session %q: %w", sess.ID, persistence.ErrConflict)
		}

		// Messages in batches: one round trip per batch, not per message.
		const batchSize = 1000
		newMsg := make(map[int64]int64, len(rows))
		for start := 0; start < len(rows); start += batchSize {
			b := &pgx.Batch{}
			end := min(start+batchSize, len(rows))
			for i := start; i < end; i++ {
				r := rows[i]
				m := r.m
				b.Queue(`
					INSERT INTO messages (session_id, seq, role, content, parts, reasoning,
						tool_call_id, tool_calls, status, meta, is_active, token_count, token_encoding, created_at)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
					RETURNING id`,
					sess.ID, m.Seq, string(m.Role), r.content, r.parts, r.reasoning, r.toolCallID,
					r.toolCalls, string(m.Status), r.meta, m.IsActive, m.TokenCount, m.TokenEncoding, r.createdAt)
			}
			res := tx.SendBatch(ctx, b)
			for i := start; i < end; i++ {
				if err := res.QueryRow().Scan(&msgIDs[i]); err != nil {
					res.Close()
					return fmt.Errorf("message %d: %w", i, err)
				}
				newMsg[d.Messages[i].ID] = msgIDs[i]
			}
			if err := res.Close(); err != nil {
				return err
			}
		}

		newComp := make(map[int64]int64, len(d.Compactions))
		for i, c := range d.Compactions {
			var summary *int64
			if c.SummaryMessageID != nil {
				id := newMsg[*c.SummaryMessageID]
				summary = &id
			}
			if err := tx.QueryRow(ctx, `
				INSERT INTO compactions (session_id, policy, compacted_ids, kept_ids,
					tokens_before, tokens_after, summary_message_id, settings, created_at,
					added_ids, messages_before, messages_after, expanded)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
				RETURNING id`,
				sess.ID, c.Policy, persistence.Remap(c.CompactedIDs, newMsg), persistence.Remap(c.KeptIDs, newMsg),
				c.TokensBefore, c.TokensAfter, summary, settings[i], stored(c.CreatedAt),
				persistence.Remap(c.AddedIDs, newMsg), c.MessagesBefore, c.MessagesAfter, c.Expanded).Scan(&compIDs[i]); err != nil {
				return fmt.Errorf("compaction %d: %w", i, err)
			}
			newComp[c.ID] = compIDs[i]
		}

		// Point compacted messages at their compaction, in one statement.
		var ids, into []int64
		for i, m := range d.Messages {
			if m.CompactedIntoID != nil {
				ids = append(ids, msgIDs[i])
				into = append(into, newComp[*m.CompactedIntoID])
			}
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `
				UPDATE messages SET compacted_into_id = u.into_id
				FROM unnest($1::bigint[], $2::bigint[]) AS u(id, into_id)
				WHERE messages.id = u.id`, ids, into); err != nil {
				return err
			}
		}
		// The projection starts from the imported state.
		snap := persistence.ImportSnapshot(d, msgIDs, compIDs, stored)
		ev, err := projectionEvent(ctx, sess.ID, persistence.EventSessionImported, snap, now())
		if err != nil {
			return err
		}
		return projectionTx(ctx, tx, []*persistence.Event{ev}, now())
	})
	if err != nil {
		return err
	}
	d.Renumber(msgIDs, compIDs)
	d.Session.CreatedAt, d.Session.UpdatedAt = stored(sess.CreatedAt), stored(sess.UpdatedAt)
	d.Session.Title = persistence.ValidText(sess.Title)
	for i := range d.Messages {
		m := &d.Messages[i]
		m.CreatedAt, m.Content, m.Reasoning, m.ToolCallID = rows[i].createdAt, rows[i].content, rows[i].reasoning, rows[i].toolCallID
	}
	for i := range d.Compactions {
		d.Compactions[i].CreatedAt = stored(d.Compactions[i].CreatedAt)
	}
	return nil
}
