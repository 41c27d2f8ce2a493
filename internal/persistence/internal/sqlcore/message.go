package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// encodeMessage prepares m for an INSERT into session sessionID; t is its
// CreatedAt when that is zero.
func (s *Store) encodeMessage(sessionID string, m *persistence.Message, t time.Time) (MessageRow, error) {
	var r MessageRow
	if err := m.CheckOwner(sessionID); err != nil {
		return r, err
	}
	r.Content, r.Reasoning = s.d.Text(m.Content), s.d.Text(m.Reasoning)
	var err error
	if partsAreContent(m.Parts, r.Content) {
		r.Parts = contentParts
	} else if r.Parts, err = JSONSlice("parts", m.Parts); err != nil {
		return r, err
	}
	if r.ToolCalls, err = JSONSlice("tool calls", m.ToolCalls); err != nil {
		return r, err
	}
	if r.Meta, err = s.rawJSON("meta", m.Meta); err != nil {
		return r, err
	}
	r.ToolCallID = s.d.Text(m.ToolCallID)
	r.M, r.CreatedAt, r.Active = m, s.orNow(m.CreatedAt, t), true
	if r.Created, err = s.d.Time(r.CreatedAt); err != nil {
		return r, err
	}
	return r, nil
}

// contentParts is what the parts column holds for a message whose parts are
// one text block equal to its content (a prompt of plain text): the text is
// stored once, in content, and readParts rebuilds the block. It is JSON, as
// PostgreSQL's json column requires, and never what JSONSlice writes.
const contentParts = `"content"`

// partsAreContent reports whether parts are one text block holding exactly
// content, valid UTF-8 (JSON would have replaced invalid bytes, so such a
// text is stored as JSON to read back as before).
func partsAreContent(parts []persistence.Part, content string) bool {
	if len(parts) != 1 {
		return false
	}
	p := parts[0]
	return p == persistence.Part{Type: "text", Text: p.Text} && p.Text == content && utf8.ValidString(content)
}

// readParts decodes the parts column of a message with content.
func readParts(col sql.NullString, content string) ([]persistence.Part, error) {
	switch {
	case !col.Valid:
		return nil, nil
	case col.String == contentParts:
		return []persistence.Part{{Type: "text", Text: content}}, nil
	}
	return DecodeJSONSlice[persistence.Part]("parts", []byte(col.String))
}

// encodeMessages encodes msgs; what names them in errors ("message 2").
func (s *Store) encodeMessages(sessionID, what string, msgs []*persistence.Message, t time.Time) ([]MessageRow, error) {
	rows := make([]MessageRow, len(msgs))
	for i, m := range msgs {
		var err error
		if rows[i], err = s.encodeMessage(sessionID, m, t); err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, i, err)
		}
	}
	return rows, nil
}

// stored is the message r describes as inserted with id and seq.
func (r *MessageRow) stored(sessionID string, id, seq int64) persistence.Message {
	m := *r.M
	m.ID, m.SessionID, m.Seq, m.CreatedAt = id, sessionID, seq, r.CreatedAt
	m.Content, m.Reasoning, m.ToolCallID = r.Content, r.Reasoning, r.ToolCallID
	m.IsActive, m.CompactedIntoID = true, nil
	return m
}

// insertNew inserts rows as the session's new active messages, with seqs
// first, first+1..., and returns their ids.
func (s *Store) insertNew(ctx context.Context, tx conn, sessionID string, rows []MessageRow, first int64) ([]int64, error) {
	for i := range rows {
		rows[i].Seq, rows[i].Active = first+int64(i), true
	}
	return s.d.InsertMessages(ctx, tx.c, sessionID, rows)
}

// appended records, inside tx, the message_appended events of rows
// inserted with ids.
func (s *Store) appended(ctx context.Context, tx conn, sessionID string, rows []MessageRow, ids []int64, t time.Time) error {
	recs := make([]any, len(rows))
	for i := range rows {
		m := rows[i].stored(sessionID, ids[i], rows[i].Seq)
		recs[i] = persistence.RecordOf(&m)
	}
	return s.project(ctx, tx, sessionID, persistence.EventMessageAppended, t, recs...)
}

// fill copies what the store assigned into the callers' messages.
func fill(sessionID string, rows []MessageRow, ids []int64) {
	for i := range rows {
		*rows[i].M = rows[i].stored(sessionID, ids[i], rows[i].Seq)
	}
}

// AppendMessages commits msgs atomically and in order, assigning each the
// next seq of the session, and bumps the session's UpdatedAt.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error {
	return s.errorf("append messages", s.appendMessages(ctx, sessionID, msgs))
}

func (s *Store) appendMessages(ctx context.Context, sessionID string, msgs []*persistence.Message) error {
	if len(msgs) == 0 {
		return s.requireSession(ctx, s.read(), sessionID)
	}
	t := s.now()
	at, err := s.d.Time(t)
	if err != nil {
		return err
	}
	rows, err := s.encodeMessages(sessionID, "message", msgs, t)
	if err != nil {
		return err
	}
	var ids []int64
	err = s.write(ctx, func(tx conn) error {
		last, err := s.bumpSession(ctx, tx, sessionID, len(msgs), at)
		if err != nil {
			return err
		}
		if ids, err = s.insertNew(ctx, tx, sessionID, rows, last-int64(len(msgs))+1); err != nil {
			return err
		}
		return s.appended(ctx, tx, sessionID, rows, ids, t)
	})
	if err != nil {
		return err
	}
	fill(sessionID, rows, ids)
	return nil
}

// MessageColumns are the columns every message read selects, in scan order.
const MessageColumns = `id, seq, role, content, parts, reasoning, tool_call_id,
	tool_calls, status, meta, is_active, compacted_into_id, token_count, token_encoding, created_at`

// Messages returns a session's messages in seq order.
func (s *Store) Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error) {
	msgs, err := s.messages(ctx, sessionID, f)
	if err != nil {
		return nil, s.errorf("messages", err)
	}
	return msgs, nil
}

func (s *Store) messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error) {
	q := MessagesQuery
	if f.ActiveOnly {
		q = ActiveMessagesQuery
	}
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = math.MaxInt64 // both dialects take a bound, not "no limit"
	}
	// The session's last seq bounds how many rows a read of all its
	// messages returns: their slice is made once instead of grown by
	// copies (a 10,000-message load allocated twice its final size). Not
	// for the active ones, which may be far fewer.
	var hint int64
	if !f.ActiveOnly {
		var last int64
		err := s.read().QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, sessionID).Scan(&last)
		if s.d.IsNoRows(err) {
			return nil, fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		hint = min(max(last-f.AfterSeq, 0), limit, maxRowsHint)
	}
	rows, err := s.read().Query(ctx, q, sessionID, f.AfterSeq, limit)
	msgs, err := collectN(rows, err, int(hint), s.newMessageScanner(sessionID).scan)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 && f.ActiveOnly {
		if err := s.requireSession(ctx, s.read(), sessionID); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// maxRowsHint bounds the rows a read makes room for up front: a damaged
// last_seq must not allocate gigabytes.
const maxRowsHint = 1 << 16

// scanMessages reads rows of MessageColumns and closes them.
func (s *Store) scanMessages(rows Rows, err error, sessionID string) ([]persistence.Message, error) {
	return collectN(rows, err, 0, s.newMessageScanner(sessionID).scan)
}

// The reads of a session's messages after a seq, at most a limit: their
// arguments are the session's id, the seq and the limit. The Active ones
// read the active messages ({active} is a literal, so the partial index
// applies).
const (
	MessagesQuery       = `SELECT ` + MessageColumns + ` FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	ActiveMessagesQuery = `SELECT ` + MessageColumns + ` FROM messages WHERE session_id = ? AND seq > ? AND {active} ORDER BY seq LIMIT ?`
)

// messageScanner reads rows of MessageColumns. Its Scan destinations are
// made once for a read, not for each row: every variable whose address
// goes to Scan is an allocation of its own, and a load reads thousands
// of rows.
type messageScanner struct {
	sessionID    string
	m            persistence.Message // the columns scanned as they are
	role, status string
	meta         []byte
	// The JSON columns are read as strings: database/sql hands SQLite's
	// text over as one.
	parts, toolCalls sql.NullString
	// database/sql reaches an *int through a string and ParseInt, a
	// **int64 through reflection.
	compactedInto sql.NullInt64
	tokens        int64
	dest          []any
}

// newMessageScanner returns a scanner of MessageColumns.
func (s *Store) newMessageScanner(sessionID string) *messageScanner {
	sc := &messageScanner{sessionID: sessionID}
	m := &sc.m
	sc.dest = []any{&m.ID, &m.Seq, &sc.role, &m.Content, &sc.parts, &m.Reasoning,
		&m.ToolCallID, &sc.toolCalls, &sc.status, &sc.meta, &m.IsActive, &sc.compactedInto,
		&sc.tokens, &m.TokenEncoding, s.d.ScanTime(&m.CreatedAt)}
	return sc
}

// scan reads one row.
func (sc *messageScanner) scan(r Row) (persistence.Message, error) {
	sc.m = persistence.Message{}
	sc.meta = nil
	if err := r.Scan(sc.dest...); err != nil {
		return persistence.Message{}, err
	}
	m := sc.m
	m.SessionID = sc.sessionID
	m.Role, m.Status = persistence.Role(sc.role), persistence.MessageStatus(sc.status)
	if sc.compactedInto.Valid {
		id := sc.compactedInto.Int64
		m.CompactedIntoID = &id
	}
	m.TokenCount = int(sc.tokens)
	var err error
	if m.Parts, err = readParts(sc.parts, m.Content); err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	if sc.toolCalls.Valid {
		m.ToolCalls, err = DecodeJSONSlice[persistence.ToolCall]("tool calls", []byte(sc.toolCalls.String))
	}
	if err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	if sc.meta != nil {
		m.Meta = json.RawMessage(sc.meta)
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

// UpdateMessage rewrites a message's mutable fields and records the change.
func (s *Store) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	return s.errorf("update message", s.updateMessage(ctx, m))
}

func (s *Store) updateMessage(ctx context.Context, m *persistence.Message) error {
	if m == nil || m.ID == 0 || m.SessionID == "" {
		return fmt.Errorf("message id and session id are required")
	}
	toolCalls, err := JSONSlice("tool calls", m.ToolCalls)
	if err != nil {
		return err
	}
	meta, err := s.rawJSON("meta", m.Meta)
	if err != nil {
		return err
	}
	t := s.now()
	at, err := s.d.Time(t)
	if err != nil {
		return err
	}
	notFound := fmt.Errorf("message %d of session %q: %w", m.ID, m.SessionID, persistence.ErrNotFound)
	return s.write(ctx, func(tx conn) error {
		// The session row first, like every other writer of it.
		if _, err := s.bumpSession(ctx, tx, m.SessionID, 0, at); err != nil {
			if s.d.IsNoRows(err) || isNotFound(err) {
				return notFound
			}
			return err
		}
		prior, err := s.priorText(ctx, tx, m.SessionID, m.ID)
		if err != nil {
			return err
		}
		content := s.d.Text(m.Content)
		// Parts stored as the content marker keep their text when the
		// content changes: written out as JSON (NULL keeps the column).
		var parts any
		if prior.Parts != nil && prior.Content != content {
			if parts, err = JSONSlice("parts", prior.Parts); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `
			UPDATE messages SET content = ?, reasoning = ?, tool_calls = ?, status = ?, meta = ?, token_count = ?,
				parts = COALESCE(?, parts)
			WHERE id = ? AND session_id = ?
			RETURNING `+MessageColumns, content, s.d.Text(m.Reasoning), toolCalls, string(m.Status), meta, m.TokenCount,
			parts, m.ID, m.SessionID)
		msgs, err := s.scanMessages(rows, err, m.SessionID)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return notFound
		}
		// What the frames streamed is the writer's text: a store that
		// changed it (PostgreSQL keeps NUL as U+FFFD) records it whole.
		if msgs[0].Content == m.Content && msgs[0].Reasoning == m.Reasoning {
			msgs[0].Streamed = m.Streamed
		}
		rec := persistence.UpdateRecord(&msgs[0], prior.Content, prior.Reasoning)
		return s.project(ctx, tx, m.SessionID, persistence.EventMessageUpdated, t, rec)
	})
}

// InterruptStreaming marks the session's streaming messages interrupted.
func (s *Store) InterruptStreaming(ctx context.Context, sessionID string) (int, error) {
	t := s.now()
	n := 0
	err := s.write(ctx, func(tx conn) error {
		rows, err := tx.Query(ctx, `
			UPDATE messages SET status = ? WHERE session_id = ? AND status = ?
			RETURNING `+MessageColumns, string(persistence.StatusInterrupted), sessionID, string(persistence.StatusStreaming))
		msgs, err := s.scanMessages(rows, err, sessionID)
		if err != nil {
			return err
		}
		n = len(msgs)
		recs := make([]any, len(msgs))
		for i := range msgs {
			recs[i] = persistence.UpdateRecord(&msgs[i], msgs[i].Content, msgs[i].Reasoning) // only the status changed
		}
		return s.project(ctx, tx, sessionID, persistence.EventMessageUpdated, t, recs...)
	})
	if err != nil {
		return 0, s.errorf("interrupt streaming", err)
	}
	return n, nil
}
