package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/internal/jsoncol"
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
	} else if r.Parts, err = jsoncol.Slice("parts", m.Parts); err != nil {
		return r, err
	}
	if r.ToolCalls, err = jsoncol.Slice("tool calls", m.ToolCalls); err != nil {
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
// PostgreSQL's json column requires, and never what jsoncol.Slice writes.
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
	return jsoncol.DecodeObjects("parts", col.String, setPart)
}

// setPart and setToolCall store one JSON field of a part or a tool call
// (their json tags) for jsoncol.DecodeObjects.
func setPart(p *persistence.Part, key, val string) bool {
	switch key {
	case "type":
		p.Type = val
	case "text":
		p.Text = val
	case "uri":
		p.URI = val
	case "name":
		p.Name = val
	case "mimeType":
		p.MimeType = val
	case "data":
		p.Data = val
	default:
		return false
	}
	return true
}

func setToolCall(c *persistence.ToolCall, key, val string) bool {
	switch key {
	case "id":
		c.ID = val
	case "name":
		c.Name = val
	case "arguments":
		c.Arguments = val
	default:
		return false
	}
	return true
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
// inserted with ids, and points the rows that do not hold their text at
// them (MessageRow.Ref).
func (s *Store) appended(ctx context.Context, tx conn, sessionID string, rows []MessageRow, ids []int64, t time.Time) error {
	evs := make([]*persistence.Event, len(rows))
	for i := range rows {
		m := rows[i].stored(sessionID, ids[i], rows[i].Seq)
		var err error
		if evs[i], err = s.projectionEvent(sessionID, persistence.EventMessageAppended, persistence.RecordOf(&m), t); err != nil {
			return err
		}
	}
	recIDs, err := s.recordTx(ctx, tx, evs, t)
	if err != nil {
		return err
	}
	return s.setTextAt(ctx, tx, rows, ids, recIDs)
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
	if err := s.appendMessages(ctx, sessionID, msgs); err != nil {
		return s.errorf("append messages", err)
	}
	return nil
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
	for i := range rows {
		rows[i].Ref = persistence.KeepsText(rows[i].Content)
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
	tool_calls, status, meta, is_active, compacted_into_id, token_count, token_encoding, created_at, content_at`

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
	switch {
	case s.d.JoinRecords && f.ActiveOnly:
		q = ActiveMessagesJoinQuery
	case s.d.JoinRecords:
		q = MessagesJoinQuery
	case f.ActiveOnly:
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
	rd := s.read()
	rows, err := rd.Query(ctx, q, sessionID, sessionID, f.AfterSeq, limit)
	msgs, err := s.scanJoined(ctx, rd, rows, err, int(hint), sessionID)
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

// scanMessages reads rows of MessageColumns and closes them, and then
// through q the text the rows do not hold (resolveText); with q nil, such
// a row is read with its content column's text.
func (s *Store) scanMessages(ctx context.Context, q *conn, rows Rows, err error, sessionID string) ([]persistence.Message, error) {
	sc := s.newMessageScanner(sessionID, false)
	msgs, err := collectN(rows, err, 0, sc.scan)
	if err != nil || q == nil || len(sc.refs) == 0 {
		return msgs, err
	}
	if err := s.resolveText(ctx, *q, sessionID, msgs, sc.refs, nil); err != nil {
		return nil, err
	}
	return msgs, nil
}

// The reads of a session's messages after a seq, at most a limit, each
// with the body of the record its content_at lists first (resolveText),
// if that is a message record of the session's stream: one query, not one
// for the rows and one for their text. Their arguments: the session's id
// (for the record's stream: a subquery that does not depend on the row,
// so run once), then the session's id, the seq and the limit. The Active
// ones read the active messages ({active} is a literal, so the partial
// index applies).
//
// On PostgreSQL the body is a subquery for each row: joined, the planner
// merged on record ids and then sorted the joined rows, text and all, by
// seq (on disk: 47 ms for 10,000 messages, against 19 ms). On SQLite the
// join is faster (Dialect.JoinRecords: 37 against 39 ms), and its rows
// come in the index's order either way.
const (
	MessagesQuery           = `SELECT ` + messageColumnsOfM + recordBody + ` FROM messages m` + messagesAfter
	ActiveMessagesQuery     = `SELECT ` + messageColumnsOfM + recordBody + ` FROM messages m` + activeMessagesAfter
	MessagesJoinQuery       = `SELECT ` + messageColumnsOfM + `e.body FROM messages m ` + recordJoin + messagesAfter
	ActiveMessagesJoinQuery = `SELECT ` + messageColumnsOfM + `e.body FROM messages m ` + recordJoin + activeMessagesAfter

	messagesAfter       = ` WHERE m.session_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?`
	activeMessagesAfter = ` WHERE m.session_id = ? AND m.seq > ? AND {active} ORDER BY m.seq LIMIT ?`
	recordIsMessage     = `e.id = {first_text_id} AND e.stream_id = (SELECT id FROM event_streams WHERE stream = ?)
	AND e.kind IN ('message_appended', 'message_updated')`
	recordBody = `(SELECT e.body FROM events e WHERE ` + recordIsMessage + `)`
	recordJoin = `LEFT JOIN events e ON ` + recordIsMessage
)

// messageColumnsOfM are MessageColumns of messages m (TestJoinedColumns),
// and a comma: the record's body follows.
const messageColumnsOfM = `m.id, m.seq, m.role, m.content, m.parts, m.reasoning, m.tool_call_id,
	m.tool_calls, m.status, m.meta, m.is_active, m.compacted_into_id, m.token_count, m.token_encoding,
	m.created_at, m.content_at, `

// scanJoined reads rows of the messages queries and closes them, decoding the
// records' text while it reads, and then through q the text of records
// other than the first.
func (s *Store) scanJoined(ctx context.Context, q conn, rows Rows, err error, n int, sessionID string) ([]persistence.Message, error) {
	sc := s.newMessageScanner(sessionID, true)
	msgs, err := collectN(rows, err, n, sc.scan)
	firsts := sc.dec.results(len(sc.refs))
	if err != nil || len(sc.refs) == 0 {
		return msgs, err
	}
	if err := s.resolveText(ctx, q, sessionID, msgs, sc.refs, firsts); err != nil {
		return nil, err
	}
	return msgs, nil
}

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
	// text over as one, and what decodes them keeps substrings of it.
	parts, toolCalls sql.NullString
	// database/sql reaches an *int through a string and ParseInt, a
	// **int64 through reflection.
	compactedInto sql.NullInt64
	tokens        int64
	textAt        sql.NullString
	body          []byte // joined: the record textAt lists first
	dest          []any
	n             int          // rows scanned
	refs          []textRef    // the rows that do not hold their text
	dec           *textDecoder // joined: decodes body
}

// newMessageScanner returns a scanner of MessageColumns, or, joined, of
// them and a record's body (MessagesQuery).
func (s *Store) newMessageScanner(sessionID string, joined bool) *messageScanner {
	sc := &messageScanner{sessionID: sessionID}
	m := &sc.m
	sc.dest = []any{&m.ID, &m.Seq, &sc.role, &m.Content, &sc.parts, &m.Reasoning,
		&m.ToolCallID, &sc.toolCalls, &sc.status, &sc.meta, &m.IsActive, &sc.compactedInto,
		&sc.tokens, &m.TokenEncoding, s.d.ScanTime(&m.CreatedAt), &sc.textAt}
	if joined {
		sc.dest = append(sc.dest, s.d.ScanBytes(&sc.body))
		sc.dec = &textDecoder{kept: s.d.BytesKept}
	}
	return sc
}

// scan reads one row.
func (sc *messageScanner) scan(r Row) (persistence.Message, error) {
	sc.m = persistence.Message{}
	sc.meta, sc.body = nil, nil
	if err := r.Scan(sc.dest...); err != nil {
		return persistence.Message{}, err
	}
	i := sc.n
	sc.n++
	m := sc.m
	m.SessionID = sc.sessionID
	m.Role, m.Status = persistence.Role(sc.role), persistence.MessageStatus(sc.status)
	if sc.compactedInto.Valid {
		id := sc.compactedInto.Int64
		m.CompactedIntoID = &id
	}
	m.TokenCount = int(sc.tokens)
	var err error
	if sc.textAt.Valid {
		// Parts that are the content are made once the content is.
		ref := textRef{i: i, at: sc.textAt.String, contentParts: sc.parts.Valid && sc.parts.String == contentParts}
		if sc.body != nil {
			sc.dec.add(len(sc.refs), sc.body)
		}
		sc.refs = append(sc.refs, ref)
		if ref.contentParts {
			sc.parts.Valid = false
		}
	}
	if m.Parts, err = readParts(sc.parts, m.Content); err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	if sc.toolCalls.Valid {
		m.ToolCalls, err = jsoncol.DecodeObjects("tool calls", sc.toolCalls.String, setToolCall)
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
	if err := s.updateMessage(ctx, m); err != nil {
		return s.errorf("update message", err)
	}
	return nil
}

func (s *Store) updateMessage(ctx context.Context, m *persistence.Message) error {
	if m == nil || m.ID == 0 || m.SessionID == "" {
		return fmt.Errorf("message id and session id are required")
	}
	toolCalls, err := jsoncol.Slice("tool calls", m.ToolCalls)
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
		text, from := persistence.AppendedText(prior.Content, content)
		// Where the content goes: the row keeps it whole (content_at
		// NULL), or the row keeps what it had and the update's record what
		// it adds (ref: content_at lists the record after what it listed).
		base, keepAt, ref := content, sql.NullString{}, false
		switch {
		case content == prior.Content:
			base, keepAt = prior.base, prior.at
		case from > 0 && (prior.at.Valid || persistence.KeepsText(text)):
			base, keepAt, ref = prior.base, prior.at, true
		case from == 0 && persistence.KeepsText(content):
			base, ref = "", true
		}
		// Parts stored as the content marker keep their text when the
		// content changes: written out as JSON (NULL keeps the column).
		var parts any
		if prior.Parts != nil && prior.Content != content {
			if parts, err = jsoncol.Slice("parts", prior.Parts); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `
			UPDATE messages SET content = ?, content_at = ?, reasoning = ?, tool_calls = ?, status = ?, meta = ?, token_count = ?,
				parts = COALESCE(?, parts)
			WHERE id = ? AND session_id = ?
			RETURNING `+MessageColumns, base, keepAt, s.d.Text(m.Reasoning), toolCalls, string(m.Status), meta, m.TokenCount,
			parts, m.ID, m.SessionID)
		msgs, err := s.scanMessages(ctx, nil, rows, err, m.SessionID) // the text is content
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return notFound
		}
		msgs[0].Content = content
		if msgs[0].Parts == nil && prior.Parts != nil && prior.Content == content {
			msgs[0].Parts = prior.Parts // the marker, in a row that does not hold its text
		}
		ev, err := s.projectionEvent(m.SessionID, persistence.EventMessageUpdated, persistence.UpdateRecord(&msgs[0], prior.Content, prior.Reasoning), t)
		if err != nil {
			return err
		}
		recIDs, err := s.recordTx(ctx, tx, []*persistence.Event{ev}, t)
		if err != nil || !ref {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE messages SET content_at = ? WHERE id = ?`, textAt(keepAt.String, recIDs[0]), m.ID)
		return err
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
		msgs, err := s.scanMessages(ctx, &tx, rows, err, sessionID)
		if err != nil {
			return err
		}
		n = len(msgs)
		evs := make([]*persistence.Event, len(msgs))
		for i := range msgs {
			rec := persistence.UpdateRecord(&msgs[i], msgs[i].Content, msgs[i].Reasoning) // only the status changed
			if evs[i], err = s.projectionEvent(sessionID, persistence.EventMessageUpdated, rec, t); err != nil {
				return err
			}
		}
		return s.projectionTx(ctx, tx, evs, t)
	})
	if err != nil {
		return 0, s.errorf("interrupt streaming", err)
	}
	return n, nil
}
