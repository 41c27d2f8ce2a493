package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
)

// messageRow is a message encoded for an INSERT, prepared before the
// transaction so that encoding errors never hold the write lock.
type messageRow struct {
	m                      *persistence.Message
	createdAt              time.Time
	created                int64
	parts, toolCalls, meta any
}

func encodeMessage(sessionID string, m *persistence.Message, t time.Time) (messageRow, error) {
	var r messageRow
	if m == nil {
		return r, errors.New("nil message")
	}
	if m.SessionID != "" && m.SessionID != sessionID {
		return r, fmt.Errorf("message belongs to session %q, not %q", m.SessionID, sessionID)
	}
	var err error
	if r.parts, err = sliceJSON("parts", m.Parts); err != nil {
		return r, err
	}
	if r.toolCalls, err = sliceJSON("tool calls", m.ToolCalls); err != nil {
		return r, err
	}
	if r.meta, err = rawJSON("meta", m.Meta); err != nil {
		return r, err
	}
	r.m, r.createdAt = m, m.CreatedAt
	if r.createdAt.IsZero() {
		r.createdAt = t
	}
	if r.created, err = nanos(r.createdAt); err != nil {
		return r, err
	}
	return r, nil
}

const insertMessage = `
	INSERT INTO messages (session_id, seq, role, content, parts, reasoning,
		tool_call_id, tool_calls, status, meta, is_active, token_count, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`

// insert writes r with the given seq and returns its id.
func (r *messageRow) insert(ctx context.Context, stmt *sql.Stmt, sessionID string, seq int64) (int64, error) {
	m := r.m
	res, err := stmt.ExecContext(ctx, sessionID, seq, string(m.Role), m.Content, r.parts,
		m.Reasoning, m.ToolCallID, r.toolCalls, string(m.Status), r.meta, m.TokenCount, r.created)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// fill copies what the store assigned into the caller's message.
func (r *messageRow) fill(sessionID string, id, seq int64) {
	r.m.ID, r.m.SessionID, r.m.Seq = id, sessionID, seq
	r.m.CreatedAt = r.createdAt
	r.m.IsActive, r.m.CompactedIntoID = true, nil
}

// AppendMessages commits msgs atomically and in order, assigning each the
// next seq of the session, and bumps the session's UpdatedAt.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error {
	if err := s.appendMessages(ctx, sessionID, msgs); err != nil {
		return fmt.Errorf("sqlite: append messages: %w", err)
	}
	return nil
}

func (s *Store) appendMessages(ctx context.Context, sessionID string, msgs []*persistence.Message) error {
	if len(msgs) == 0 {
		ok, err := s.sessionExists(ctx, sessionID)
		if err == nil && !ok {
			err = fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
		return err
	}
	t := now()
	at, err := nanos(t)
	if err != nil {
		return err
	}
	rows := make([]messageRow, len(msgs))
	for i, m := range msgs {
		if rows[i], err = encodeMessage(sessionID, m, t); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}

	ids := make([]int64, len(msgs))
	var first int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		last, err := bumpSession(ctx, tx, sessionID, len(msgs), at)
		if err != nil {
			return err
		}
		first = last - int64(len(msgs)) + 1
		stmt, err := tx.PrepareContext(ctx, insertMessage)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range rows {
			if ids[i], err = rows[i].insert(ctx, stmt, sessionID, first+int64(i)); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].fill(sessionID, ids[i], first+int64(i))
	}
	return nil
}

const messageColumns = `id, seq, role, content, parts, reasoning, tool_call_id,
	tool_calls, status, meta, is_active, compacted_into_id, token_count, created_at`

// Messages returns a session's messages in seq order.
func (s *Store) Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error) {
	msgs, err := s.messages(ctx, sessionID, f)
	if err != nil {
		return nil, fmt.Errorf("sqlite: messages: %w", err)
	}
	return msgs, nil
}

func (s *Store) messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error) {
	q := `SELECT ` + messageColumns + ` FROM messages WHERE session_id = ? AND seq > ?`
	if f.ActiveOnly {
		q += ` AND is_active = 1` // literal, so the partial index applies
	}
	q += ` ORDER BY seq`
	rows, err := s.rdb.QueryContext(ctx, q, sessionID, f.AfterSeq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()

	var msgs []persistence.Message
	for rows.Next() {
		var (
			m                      persistence.Message
			role, status           string
			parts, toolCalls, meta []byte
			active                 int
			into                   sql.NullInt64
			created                int64
		)
		if err := rows.Scan(&m.ID, &m.Seq, &role, &m.Content, &parts, &m.Reasoning,
			&m.ToolCallID, &toolCalls, &status, &meta, &active, &into,
			&m.TokenCount, &created); err != nil {
			return nil, err
		}
		m.SessionID = sessionID
		m.Role, m.Status = persistence.Role(role), persistence.MessageStatus(status)
		if m.Parts, err = decodeSlice[persistence.Part]("parts", parts); err != nil {
			return nil, fmt.Errorf("message %d: %w", m.ID, err)
		}
		if m.ToolCalls, err = decodeSlice[persistence.ToolCall]("tool calls", toolCalls); err != nil {
			return nil, fmt.Errorf("message %d: %w", m.ID, err)
		}
		if meta != nil {
			m.Meta = json.RawMessage(meta)
		}
		m.IsActive = active == 1
		if into.Valid {
			m.CompactedIntoID = &into.Int64
		}
		m.CreatedAt = fromNanos(created)
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		ok, err := s.sessionExists(ctx, sessionID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
	}
	return msgs, nil
}

// ApplyCompaction atomically appends the summary message (if any), stores c
// and marks c.CompactedIDs inactive, compacted into c.
func (s *Store) ApplyCompaction(ctx context.Context, c *persistence.Compaction, summary *persistence.Message) error {
	if err := s.applyCompaction(ctx, c, summary); err != nil {
		return fmt.Errorf("sqlite: apply compaction: %w", err)
	}
	return nil
}

func (s *Store) applyCompaction(ctx context.Context, c *persistence.Compaction, summary *persistence.Message) error {
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
	compacted, err := sliceJSON("compacted ids", c.CompactedIDs)
	if err != nil {
		return err
	}
	kept, err := sliceJSON("kept ids", c.KeptIDs)
	if err != nil {
		return err
	}
	settings, err := rawJSON("settings", c.Settings)
	if err != nil {
		return err
	}
	var row *messageRow
	if summary != nil {
		r, err := encodeMessage(c.SessionID, summary, t)
		if err != nil {
			return fmt.Errorf("summary: %w", err)
		}
		row = &r
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
	var seq int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		n := 0
		if row != nil {
			n = 1
		}
		last, err := bumpSession(ctx, tx, c.SessionID, n, at)
		if err != nil {
			return err
		}
		if row != nil {
			stmt, err := tx.PrepareContext(ctx, insertMessage)
			if err != nil {
				return err
			}
			defer stmt.Close()
			seq = last
			id, err := row.insert(ctx, stmt, c.SessionID, seq)
			if err != nil {
				return fmt.Errorf("summary: %w", err)
			}
			summaryID = &id
		}
		res, err := tx.ExecContext(ctx, `
			INSERT INTO compactions (session_id, policy, compacted_ids, kept_ids,
				tokens_before, tokens_after, summary_message_id, settings, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.SessionID, c.Policy, compacted, kept, c.TokensBefore, c.TokensAfter,
			summaryID, settings, created)
		if err != nil {
			return err
		}
		if compactionID, err = res.LastInsertId(); err != nil {
			return err
		}
		if len(distinct) == 0 {
			return nil
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
		return nil
	})
	if err != nil {
		return err
	}
	c.ID, c.CreatedAt, c.SummaryMessageID = compactionID, createdAt, summaryID
	if row != nil {
		row.fill(c.SessionID, *summaryID, seq)
	}
	return nil
}

// Compactions lists a session's compaction records, oldest first.
func (s *Store) Compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error) {
	list, err := s.compactions(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: compactions: %w", err)
	}
	return list, nil
}

func (s *Store) compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error) {
	rows, err := s.rdb.QueryContext(ctx, `
		SELECT id, policy, compacted_ids, kept_ids, tokens_before, tokens_after,
			summary_message_id, settings, created_at
		FROM compactions WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []persistence.Compaction
	for rows.Next() {
		var (
			c               persistence.Compaction
			compacted, kept []byte
			settings        []byte
			summary         sql.NullInt64
			created         int64
		)
		if err := rows.Scan(&c.ID, &c.Policy, &compacted, &kept, &c.TokensBefore,
			&c.TokensAfter, &summary, &settings, &created); err != nil {
			return nil, err
		}
		c.SessionID = sessionID
		if c.CompactedIDs, err = decodeSlice[int64]("compacted ids", compacted); err != nil {
			return nil, fmt.Errorf("compaction %d: %w", c.ID, err)
		}
		if c.KeptIDs, err = decodeSlice[int64]("kept ids", kept); err != nil {
			return nil, fmt.Errorf("compaction %d: %w", c.ID, err)
		}
		if summary.Valid {
			c.SummaryMessageID = &summary.Int64
		}
		if settings != nil {
			c.Settings = json.RawMessage(settings)
		}
		c.CreatedAt = fromNanos(created)
		list = append(list, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		ok, err := s.sessionExists(ctx, sessionID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
	}
	return list, nil
}
