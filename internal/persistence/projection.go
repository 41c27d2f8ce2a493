package persistence

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// IsProjection reports whether k is a projection kind: an event the
// messages and compactions tables are rebuilt from.
func (k EventKind) IsProjection() bool {
	switch k {
	case EventMessageAppended, EventMessageUpdated, EventMessagesChanged, EventSessionImported:
		return true
	}
	return false
}

// MessageRecord is the body of message_appended and message_updated events:
// a message as the store wrote it. Every backend writes the same JSON, so a
// session's messages can be rebuilt from its events anywhere.
type MessageRecord struct {
	ID              int64           `json:"id"`
	Seq             int64           `json:"seq"`
	Role            Role            `json:"role"`
	Content         string          `json:"content"`
	Parts           []Part          `json:"parts,omitempty"`
	Reasoning       string          `json:"reasoning,omitempty"`
	ToolCallID      string          `json:"toolCallId,omitempty"`
	ToolCalls       []ToolCall      `json:"toolCalls,omitempty"`
	Status          MessageStatus   `json:"status"`
	Meta            json.RawMessage `json:"meta,omitempty"`
	TokenCount      int             `json:"tokenCount,omitempty"`
	CreatedAt       time.Time       `json:"createdAt"`
	IsActive        bool            `json:"isActive"`
	CompactedIntoID *int64          `json:"compactedIntoId,omitempty"`
	// ContentFrom, in a message_updated record, says that Content is what
	// the update appended to the message's content, which was ContentFrom
	// bytes long; 0: Content is the whole value. ReasoningFrom likewise.
	// A streamed reply is saved as it grows: recorded whole each time, a
	// long reply would cost its length squared.
	ContentFrom   int `json:"contentFrom,omitempty"`
	ReasoningFrom int `json:"reasoningFrom,omitempty"`
	// ContentStreamed, in a message_updated record, says that the text the
	// update wrote begins with that many bytes not in the record: bytes
	// ContentFrom to ContentFrom+ContentStreamed of the text the session's
	// frames streamed for the message (Message.Streamed); Content follows
	// them. ReasoningStreamed likewise. StreamedText puts them back.
	ContentStreamed   int `json:"contentStreamed,omitempty"`
	ReasoningStreamed int `json:"reasoningStreamed,omitempty"`
}

// UpdateRecord is the record of an update that turned a message's content
// and reasoning from prevContent and prevReasoning into m's: where the new
// text extends the old, only what was appended (see ContentFrom).
func UpdateRecord(m *Message, prevContent, prevReasoning string) MessageRecord {
	r := RecordOf(m)
	r.Content, r.ContentFrom = AppendedText(prevContent, m.Content)
	r.Reasoning, r.ReasoningFrom = AppendedText(prevReasoning, m.Reasoning)
	r.ContentStreamed, r.Content = streamedPart(m.Content, r.Content, r.ContentFrom, m.Streamed.Content)
	r.ReasoningStreamed, r.Reasoning = streamedPart(m.Reasoning, r.Reasoning, r.ReasoningFrom, m.Streamed.Reasoning)
	return r
}

// streamedPart splits text, the part of whole a record writes from byte
// from, into the bytes the frames hold (whole's first streamed bytes) and
// the rest. Only valid UTF-8 is cut, at a character's start.
func streamedPart(whole, text string, from, streamed int) (int, string) {
	n := min(streamed, len(whole)) - from
	if n <= 0 || !utf8.ValidString(whole) {
		return 0, text
	}
	for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
		n--
	}
	return n, text[n:]
}

// StreamedText is a session's text streamed for one message: what its
// agent_message_chunk (content) and agent_thought_chunk (reasoning) frames
// naming the message carried, in order.
type StreamedText struct{ Content, Reasoning string }

// WithStreamed is r with the bytes it left to the frames (ContentStreamed,
// ReasoningStreamed) put back from s, the text streamed for its message.
func (r MessageRecord) WithStreamed(s StreamedText) (MessageRecord, error) {
	var err error
	if r.Content, err = unstream(r.Content, s.Content, r.ContentFrom, r.ContentStreamed); err != nil {
		return r, fmt.Errorf("content of message %d: %w", r.ID, err)
	}
	if r.Reasoning, err = unstream(r.Reasoning, s.Reasoning, r.ReasoningFrom, r.ReasoningStreamed); err != nil {
		return r, fmt.Errorf("reasoning of message %d: %w", r.ID, err)
	}
	r.ContentStreamed, r.ReasoningStreamed = 0, 0
	return r, nil
}

func unstream(text, streamed string, from, n int) (string, error) {
	if n == 0 {
		return text, nil
	}
	if from < 0 || n < 0 || from+n > len(streamed) {
		return "", fmt.Errorf("bytes %d to %d were streamed, but its frames in the log hold %d bytes", from, from+n, len(streamed))
	}
	return streamed[from:from+n] + text, nil
}

// AppendedText is what next adds to prev and where, when next extends
// prev; or next whole, at 0: what an update records (UpdateRecord). Only valid UTF-8 is cut: a record is JSON, which would
// turn a stray byte of prev into three and put the cut elsewhere.
func AppendedText(prev, next string) (string, int) {
	if prev == "" || len(next) < len(prev) || next[:len(prev)] != prev || !utf8.ValidString(prev) || !utf8.ValidString(next) {
		return next, 0
	}
	return next[len(prev):], len(prev)
}

// ApplyText is the text a record's field (text, from) makes of prev.
func ApplyText(prev, text string, from int) (string, error) {
	if from == 0 {
		return text, nil
	}
	if from == len(prev) {
		return prev + text, nil
	}
	// Earlier releases recorded an import with the text as the dump had
	// it, while PostgreSQL keeps NUL as U+FFFD: the update measured that.
	if v := ValidText(prev); from == len(v) {
		return v + text, nil
	}
	return "", fmt.Errorf("appends at byte %d of a text of %d bytes", from, len(prev))
}

// Updated is the message an update record r makes of prev (the message as
// the records before r left it), in session sessionID: its text appended
// to prev's where r says so (ContentFrom, ReasoningFrom), and its
// compaction state prev's, which updates never change.
func (r MessageRecord) Updated(sessionID string, prev *Message) (Message, error) {
	m := r.Message(sessionID)
	var err error
	if m.Content, err = ApplyText(prev.Content, r.Content, r.ContentFrom); err != nil {
		return m, fmt.Errorf("content of message %d: %w", r.ID, err)
	}
	if m.Reasoning, err = ApplyText(prev.Reasoning, r.Reasoning, r.ReasoningFrom); err != nil {
		return m, fmt.Errorf("reasoning of message %d: %w", r.ID, err)
	}
	m.IsActive, m.CompactedIntoID = prev.IsActive, prev.CompactedIntoID
	return m, nil
}

// RecordOf is the record of m.
func RecordOf(m *Message) MessageRecord {
	return MessageRecord{
		ID: m.ID, Seq: m.Seq, Role: m.Role, Content: m.Content, Parts: m.Parts,
		Reasoning: m.Reasoning, ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls,
		Status: m.Status, Meta: m.Meta, TokenCount: m.TokenCount, CreatedAt: m.CreatedAt,
		IsActive: m.IsActive, CompactedIntoID: m.CompactedIntoID,
	}
}

// Message is the message r describes, in session sessionID.
func (r MessageRecord) Message(sessionID string) Message {
	return Message{
		ID: r.ID, SessionID: sessionID, Seq: r.Seq, Role: r.Role, Content: r.Content,
		Parts: r.Parts, Reasoning: r.Reasoning, ToolCallID: r.ToolCallID, ToolCalls: r.ToolCalls,
		Status: r.Status, Meta: r.Meta, IsActive: r.IsActive, CompactedIntoID: r.CompactedIntoID,
		TokenCount: r.TokenCount, CreatedAt: r.CreatedAt,
	}
}

// EventMessagesChanged is a projection kind: the body (a ChangeRecord) is
// what a compaction operation (compact, expand, collapse, delete) changed:
// the rows it added, whole; the compaction state of the rows it touched;
// the rows it deleted; the compaction record after the change.
const EventMessagesChanged EventKind = "messages_changed"

// ChangeRecord is the body of a messages_changed event.
type ChangeRecord struct {
	// Messages are rows the change added (a summary), as they are after it.
	// Records written before patches existed also hold every touched row
	// here, whole: a rebuild still reads them.
	Messages          []MessageRecord `json:"messages,omitempty"`
	Patches           []MessagePatch  `json:"patches,omitempty"`         // existing rows whose compaction state changed
	DeletedMessages   []int64         `json:"deletedMessages,omitempty"` // rows the change deleted
	Compaction        *Compaction     `json:"compaction,omitempty"`      // the record after the change
	DeletedCompaction int64           `json:"deletedCompaction,omitempty"`
}

// MessagePatch is the compaction state after a change of the existing
// messages IDs: a compaction operation changes is_active and
// compacted_into_id of the rows it touches and nothing else, so that is all
// its event records of them (O(rows), not O(their text)).
type MessagePatch struct {
	IDs             []int64 `json:"ids"`
	IsActive        bool    `json:"isActive"`
	CompactedIntoID *int64  `json:"compactedIntoId,omitempty"`
}

// EventSessionImported is a projection kind: the body (an ImportRecord) is
// the whole session as an import stored it; a rebuild starts from it.
const EventSessionImported EventKind = "session_imported"

// ImportRecord is the body of a session_imported event.
type ImportRecord struct {
	Messages    []MessageRecord `json:"messages"`
	Compactions []Compaction    `json:"compactions"`
}

// ImportSnapshot is the record of d as a store imported it: with the ids it
// assigned (see SessionDump.Renumber) and times as it keeps them (at, e.g.
// truncation to the microsecond). d is not changed.
func ImportSnapshot(d *SessionDump, msgIDs, compIDs []int64, at func(time.Time) time.Time) ImportRecord {
	c := *d
	c.Messages = append([]Message(nil), d.Messages...)
	c.Compactions = append([]Compaction(nil), d.Compactions...)
	c.Renumber(msgIDs, compIDs)
	rec := ImportRecord{Messages: make([]MessageRecord, 0, len(c.Messages)), Compactions: make([]Compaction, 0, len(c.Compactions))}
	for i := range c.Messages {
		m := c.Messages[i]
		m.CreatedAt = at(m.CreatedAt)
		rec.Messages = append(rec.Messages, RecordOf(&m))
	}
	for _, x := range c.Compactions {
		x.CreatedAt = at(x.CreatedAt)
		rec.Compactions = append(rec.Compactions, x)
	}
	return rec
}
