// Package persistence defines crow-acp's storage seam: the domain types a
// session is made of and the Store interface every backend implements.
//
// Nothing here knows the wire protocol or the model API. Implementations live
// in sub-packages (sqlite, postgres) and are pinned by compile-time assertions.
package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned (wrapped) when a session or message does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned (wrapped) when a write would violate a uniqueness
// rule, such as creating a session whose id already exists.
var ErrConflict = errors.New("conflict")

// ErrInvalidCursor is returned (wrapped) by ListSessions when
// ListSessionsOptions.Cursor was not produced by a previous ListSessions call.
var ErrInvalidCursor = errors.New("invalid cursor")

// Page sizes of ListSessions.
const (
	DefaultListLimit = 50  // used when ListSessionsOptions.Limit is 0 or negative
	MaxListLimit     = 500 // larger limits are clamped to this
)

// Role is who authored a message, in the model API's terms.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	// RoleSummary marks a compaction summary: it enters the model's context as
	// context, never as something the user said.
	RoleSummary Role = "summary"
)

// MessageStatus records how a message ended. Partial messages are kept: a
// cancelled or failed stream still stores what the user already saw.
type MessageStatus string

const (
	StatusComplete  MessageStatus = "complete"
	StatusCancelled MessageStatus = "cancelled"
	StatusFailed    MessageStatus = "failed"
	// StatusStreaming is an assistant reply still being streamed: it is
	// stored when the stream starts and updated as it grows.
	StatusStreaming MessageStatus = "streaming"
	// StatusInterrupted is a reply whose stream was cut by the death of the
	// process writing it; it holds what was saved before.
	StatusInterrupted MessageStatus = "interrupted"
)

// Session is one ACP session. Its ID never changes, not even across
// compaction.
type Session struct {
	ID        string
	Cwd       string
	Title     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Metadata is opaque JSON owned by the agent (MCP servers, mode, model...).
	Metadata json.RawMessage
}

// ToolCall is one function call requested by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Part is one piece of structured message content, kept so that a replay can
// show exactly what was sent and the model can receive non-text input.
type Part struct {
	Type     string `json:"type"` // text, image, resource_link, resource
	Text     string `json:"text,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data,omitempty"` // base64 for images and blobs
}

// Message is one entry of a session's history, ordered by Seq.
type Message struct {
	ID        int64
	SessionID string
	// Seq is assigned by the store on append: 1, 2, 3... per session, never
	// reused, never derived from a clock.
	Seq        int64
	Role       Role
	Content    string // the text the model sees
	Parts      []Part // structured content (user prompts); may be nil
	Reasoning  string // reasoning_content streamed by the model
	ToolCallID string // for RoleTool: the call this result answers
	ToolCalls  []ToolCall
	Status     MessageStatus
	// Meta is opaque JSON owned by the agent (tool title/kind for replay...).
	Meta            json.RawMessage
	IsActive        bool
	CompactedIntoID *int64
	// TokenCount is the cached token count of what the model reads for this
	// message, valid only for the tokenizer named TokenEncoding ("" = not
	// counted).
	TokenCount    int
	TokenEncoding string
	CreatedAt     time.Time
	// Streamed is set by the writer of a streamed reply and never stored:
	// see Streamed.
	Streamed Streamed
}

// Streamed is how much of a message's Content and Reasoning, from their
// first byte, the client was sent in agent_message_chunk and
// agent_thought_chunk frames naming the message (msg_<seq>), frames the
// event log keeps. An update records that part by its length instead of
// again (UpdateRecord): a streamed reply is otherwise in the log twice, as
// its frames and as its text.
type Streamed struct{ Content, Reasoning int }

// Compaction is the record of one applied compaction policy. The compacted
// messages are kept (inactive) and can be re-activated.
type Compaction struct {
	ID           int64
	SessionID    string
	Policy       string
	CompactedIDs []int64
	KeptIDs      []int64
	TokensBefore int
	TokensAfter  int
	// SummaryMessageID is the summary message inserted by this compaction, if any.
	SummaryMessageID *int64
	// AddedIDs are all the messages this compaction inserted (the summary,
	// markers of pruned tool output).
	AddedIDs []int64
	// Message counts of the model's context before and after.
	MessagesBefore int
	MessagesAfter  int
	// Expanded is true while the compacted messages are re-activated.
	Expanded  bool
	Settings  json.RawMessage
	CreatedAt time.Time
}

// ListSessionsOptions filters and pages ListSessions. Sessions come newest
// (by UpdatedAt) first, ties broken by ascending ID. Paging is keyset-based:
// sessions created or bumped while paging do not cause duplicates or skips
// among the others.
type ListSessionsOptions struct {
	Cwd    string // exact match when non-empty
	Limit  int    // 0 means DefaultListLimit; clamped to MaxListLimit
	Cursor string // opaque, from a previous page; empty for the first page
}

// MessageFilter selects messages of one session.
type MessageFilter struct {
	ActiveOnly bool  // only messages in the model's current context
	AfterSeq   int64 // only messages with Seq > AfterSeq
	Limit      int   // at most this many, the first by seq; 0: all
}

// Store is the single persistence seam. Every method is safe for concurrent
// use. Errors wrap ErrNotFound or ErrConflict where those apply.
//
// Common rules: times round-trip exactly (at least to the microsecond; compare
// with time.Time.Equal); Metadata, Meta and Settings must be empty or valid
// JSON; a nil slice may come back empty and vice versa. Whenever the store
// bumps a session's UpdatedAt it makes it strictly later than before, even if
// the clock has not moved. A write that returns an error has changed nothing,
// neither in the store nor in the structs passed in. Free text (a session's
// Title, a message's Content, Reasoning and ToolCallID) is always stored, even
// when it holds NUL or bytes that are not UTF-8 (a tool's output may): a
// store that cannot keep those replaces them as ValidText does and hands the
// stored text back in the struct passed in. A write made through a fenced
// view (WithFence; lease.go) is refused with ErrLeaseLost, in its own
// transaction, once that lease is no longer the session's live lease.
type Store interface {
	FrameLog        // persistence/events.go
	MessageUpdater  // persistence/events.go
	Leases          // persistence/lease.go
	PermissionStore // persistence/permission.go

	// WithFence returns the store with every write it makes fenced by f (a
	// cheap view of the same database; see Fence). Reads are unchanged.
	WithFence(f Fence) Store

	// CreateSession inserts s; CreatedAt/UpdatedAt are set when zero.
	// ErrConflict if the id exists.
	CreateSession(ctx context.Context, s *Session) error
	// GetSession returns ErrNotFound for an unknown id.
	GetSession(ctx context.Context, id string) (*Session, error)
	// UpdateSession writes Cwd, Title, Metadata and bumps UpdatedAt, which it
	// sets on s. ErrNotFound for an unknown id.
	UpdateSession(ctx context.Context, s *Session) error
	// ListSessions returns one page and the cursor of the next ("" = last page).
	// ErrInvalidCursor for a cursor it did not produce.
	ListSessions(ctx context.Context, opts ListSessionsOptions) ([]Session, string, error)
	// DeleteSession removes a session and everything it owns. Unknown ids are
	// not an error.
	DeleteSession(ctx context.Context, id string) error

	// AppendMessages commits msgs atomically, in order, assigning ID and Seq
	// to each (and CreatedAt when zero), and bumps the session's UpdatedAt.
	// New messages are active. ErrNotFound if the session does not exist.
	// Each message's SessionID is set to sessionID (a different non-empty
	// SessionID is an error).
	AppendMessages(ctx context.Context, sessionID string, msgs ...*Message) error
	// Messages returns a session's messages in Seq order. ErrNotFound for an
	// unknown session; an existing session without messages yields none.
	Messages(ctx context.Context, sessionID string, f MessageFilter) ([]Message, error)

	// Compactions lists a session's compaction records, oldest first.
	// ErrNotFound for an unknown session.
	Compactions(ctx context.Context, sessionID string) ([]Compaction, error)

	Importer        // dump.go
	Forker          // fork.go
	CompactionStore // compaction.go

	Close() error
}

// CheckOwner reports whether m may be written to session sessionID: it
// must exist and name that session or none.
func (m *Message) CheckOwner(sessionID string) error {
	if m == nil {
		return errors.New("nil message")
	}
	if m.SessionID != "" && m.SessionID != sessionID {
		return fmt.Errorf("message belongs to session %q, not %q", m.SessionID, sessionID)
	}
	return nil
}
