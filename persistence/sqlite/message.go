package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/internal/jsoncol"
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
	if err := m.CheckOwner(sessionID); err != nil {
		return r, err
	}
	var err error
	if r.parts, err = jsoncol.Slice("parts", m.Parts); err != nil {
		return r, err
	}
	if r.toolCalls, err = jsoncol.Slice("tool calls", m.ToolCalls); err != nil {
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
		tool_call_id, tool_calls, status, meta, is_active, token_count, token_encoding, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`

// insert writes r with the given seq and returns its id.
func (r *messageRow) insert(ctx context.Context, tx *sql.Tx, sessionID string, seq int64) (int64, error) {
	m := r.m
	res, err := tx.ExecContext(ctx, insertMessage, sessionID, seq, string(m.Role), m.Content, r.parts,
		m.Reasoning, m.ToolCallID, r.toolCalls, string(m.Status), r.meta, m.TokenCount, m.TokenEncoding, r.created)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// record is the projection record of r as inserted.
func (r *messageRow) record(sessionID string, id, seq int64) persistence.MessageRecord {
	m := *r.m
	m.ID, m.SessionID, m.Seq, m.CreatedAt = id, sessionID, seq, r.createdAt
	m.IsActive, m.CompactedIntoID = true, nil
	return persistence.RecordOf(&m)
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
		evs := make([]*persistence.Event, len(rows))
		for i := range rows {
			if ids[i], err = rows[i].insert(ctx, tx, sessionID, first+int64(i)); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			rec := rows[i].record(sessionID, ids[i], first+int64(i))
			if evs[i], err = projectionEvent(ctx, sessionID, persistence.EventMessageAppended, rec, t); err != nil {
				return err
			}
		}
		return projectionTx(ctx, tx, evs, t)
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
	tool_calls, status, meta, is_active, compacted_into_id, token_count, token_encoding, created_at`

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
		m, err := scanMessage(rows, sessionID)
		if err != nil {
			return nil, err
		}
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

// scanMessage reads one row of messageColumns.
func scanMessage(r scanner, sessionID string) (persistence.Message, error) {
	var (
		m                      persistence.Message
		role, status           string
		parts, toolCalls, meta []byte
		active                 int
		into                   sql.NullInt64
		created                int64
	)
	if err := r.Scan(&m.ID, &m.Seq, &role, &m.Content, &parts, &m.Reasoning,
		&m.ToolCallID, &toolCalls, &status, &meta, &active, &into,
		&m.TokenCount, &m.TokenEncoding, &created); err != nil {
		return m, err
	}
	m.SessionID = sessionID
	m.Role, m.Status = persistence.Role(role), persistence.MessageStatus(status)
	var err error
	if m.Parts, err = jsoncol.DecodeSlice[persistence.Part]("parts", parts); err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	if m.ToolCalls, err = jsoncol.DecodeSlice[persistence.ToolCall]("tool calls", toolCalls); err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	if meta != nil {
		m.Meta = json.RawMessage(meta)
	}
	m.IsActive = active == 1
	if into.Valid {
		m.CompactedIntoID = &into.Int64
	}
	m.CreatedAt = fromNanos(created)
	return m, nil
}

// ApplyCompaction atomically appends the summary message (if any), stores c
// and marks c.CompactedIDs inactive, compacted into c.
func (s *Store) ApplyCompaction(ctx context.Context, c *persistence.Compaction, summary *persistence.Message) error {
	var added []*persistence.Message
	if summary != nil {
		added = []*persistence.Message{summary}
	}
	if err := s.compact(ctx, c, added); err != nil {
		return fmt.Errorf("sqlite: apply compaction: %w", err)
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
		SELECT `+compactionColumns+`
		FROM compactions WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []persistence.Compaction
	for rows.Next() {
		c, err := scanCompaction(rows, sessionID)
		if err != nil {
			return nil, err
		}
		list = append(list, *c)
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
