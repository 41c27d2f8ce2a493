package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/internal/jsoncol"
)

// messageRow is a message encoded for an INSERT, prepared before the
// transaction so that encoding errors never hold the session's lock.
type messageRow struct {
	m                      *persistence.Message
	createdAt              time.Time
	parts, toolCalls, meta any
	// The free text as PostgreSQL can keep it (persistence.ValidText).
	content, reasoning, toolCallID string
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
	r.content, r.reasoning = persistence.ValidText(m.Content), persistence.ValidText(m.Reasoning)
	r.toolCallID = persistence.ValidText(m.ToolCallID)
	r.m, r.createdAt = m, stored(m.CreatedAt)
	if m.CreatedAt.IsZero() {
		r.createdAt = t
	}
	return r, nil
}

const insertMessage = `
	INSERT INTO messages (session_id, seq, role, content, parts, reasoning,
		tool_call_id, tool_calls, status, meta, is_active, token_count, token_encoding, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, true, $11, $12, $13)
	RETURNING id`

// queue adds r's INSERT, with the given seq, to b.
func (r *messageRow) queue(b *pgx.Batch, sessionID string, seq int64) {
	m := r.m
	b.Queue(insertMessage, sessionID, seq, string(m.Role), r.content, r.parts,
		r.reasoning, r.toolCallID, r.toolCalls, string(m.Status), r.meta, m.TokenCount, m.TokenEncoding, r.createdAt)
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
	r.m.Content, r.m.Reasoning, r.m.ToolCallID = r.content, r.reasoning, r.toolCallID
	r.m.IsActive, r.m.CompactedIntoID = true, nil
}

// insertRows inserts rows with seqs first, first+1... in one round trip and
// returns their ids. An error names the index of the failing row.
func insertRows(ctx context.Context, tx pgx.Tx, sessionID string, rows []messageRow, first int64) ([]int64, error) {
	b := &pgx.Batch{}
	for i := range rows {
		rows[i].queue(b, sessionID, first+int64(i))
	}
	res := tx.SendBatch(ctx, b)
	ids := make([]int64, len(rows))
	for i := range rows {
		if err := res.QueryRow().Scan(&ids[i]); err != nil {
			res.Close()
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return ids, res.Close()
}

// AppendMessages commits msgs atomically and in order, assigning each the
// next seq of the session, and bumps the session's UpdatedAt.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error {
	if err := s.appendMessages(ctx, sessionID, msgs); err != nil {
		return fmt.Errorf("postgres: append messages: %w", err)
	}
	return nil
}

func (s *Store) appendMessages(ctx context.Context, sessionID string, msgs []*persistence.Message) error {
	if len(msgs) == 0 {
		ok, err := s.sessionExists(ctx, s.pool, sessionID)
		if err == nil && !ok {
			err = fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
		return err
	}
	t := now()
	rows := make([]messageRow, len(msgs))
	for i, m := range msgs {
		var err error
		if rows[i], err = encodeMessage(sessionID, m, t); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}

	var ids []int64
	var first int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		last, err := bumpSession(ctx, tx, sessionID, len(msgs), t)
		if err != nil {
			return err
		}
		first = last - int64(len(msgs)) + 1
		if ids, err = insertRows(ctx, tx, sessionID, rows, first); err != nil {
			return err
		}
		evs := make([]*persistence.Event, len(rows))
		for i := range rows {
			rec := rows[i].record(sessionID, ids[i], first+int64(i))
			if evs[i], err = projectionEvent(ctx, sessionID, persistence.EventMessageAppended, rec, t); err != nil {
				return err
			}
		}
		return projectionTx(ctx, tx, evs, t)
	})
	if err != nil {
		return classify(err)
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
		return nil, fmt.Errorf("postgres: messages: %w", err)
	}
	return msgs, nil
}

func (s *Store) messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error) {
	q := `SELECT ` + messageColumns + ` FROM messages WHERE session_id = $1 AND seq > $2`
	if f.ActiveOnly {
		q += ` AND is_active` // literal, so the partial index applies
	}
	q += ` ORDER BY seq`
	rows, err := s.pool.Query(ctx, q, sessionID, f.AfterSeq)
	if err != nil {
		return nil, err
	}

	msgs, err := scanMessages(rows, sessionID)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		ok, err := s.sessionExists(ctx, s.pool, sessionID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
	}
	return msgs, nil
}

// scanMessages reads rows of messageColumns and closes rows.
func scanMessages(rows pgx.Rows, sessionID string) ([]persistence.Message, error) {
	defer rows.Close()
	var msgs []persistence.Message
	for rows.Next() {
		var (
			m                      persistence.Message
			role, status           string
			parts, toolCalls, meta []byte
			tokens                 int64
		)
		if err := rows.Scan(&m.ID, &m.Seq, &role, &m.Content, &parts, &m.Reasoning,
			&m.ToolCallID, &toolCalls, &status, &meta, &m.IsActive, &m.CompactedIntoID,
			&tokens, &m.TokenEncoding, &m.CreatedAt); err != nil {
			return nil, err
		}
		m.SessionID = sessionID
		m.Role, m.Status = persistence.Role(role), persistence.MessageStatus(status)
		m.TokenCount = int(tokens)
		var err error
		if m.Parts, err = jsoncol.DecodeSlice[persistence.Part]("parts", parts); err != nil {
			return nil, fmt.Errorf("message %d: %w", m.ID, err)
		}
		if m.ToolCalls, err = jsoncol.DecodeSlice[persistence.ToolCall]("tool calls", toolCalls); err != nil {
			return nil, fmt.Errorf("message %d: %w", m.ID, err)
		}
		if meta != nil {
			m.Meta = json.RawMessage(meta)
		}
		m.CreatedAt = m.CreatedAt.UTC()
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// ApplyCompaction atomically appends the summary message (if any), stores c
// and marks c.CompactedIDs inactive, compacted into c.
func (s *Store) ApplyCompaction(ctx context.Context, c *persistence.Compaction, summary *persistence.Message) error {
	var added []*persistence.Message
	if summary != nil {
		added = []*persistence.Message{summary}
	}
	if err := s.compact(ctx, c, added); err != nil {
		return fmt.Errorf("postgres: apply compaction: %w", err)
	}
	return nil
}

// distinctIDs returns ids without duplicates, in first-seen order.
func distinctIDs(ids []int64) []int64 {
	seen := make(map[int64]struct{}, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

// Compactions lists a session's compaction records, oldest first.
func (s *Store) Compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error) {
	list, err := s.compactions(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("postgres: compactions: %w", err)
	}
	return list, nil
}

func (s *Store) compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+compactionColumns+`
		FROM compactions WHERE session_id = $1 ORDER BY id`, sessionID)
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
		ok, err := s.sessionExists(ctx, s.pool, sessionID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
	}
	return list, nil
}
