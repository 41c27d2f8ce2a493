package persistence

import (
	"context"
	"errors"
	"time"
)

// EventKind says what an event records. Frame kinds hold a JSON-RPC frame
// exactly as it crossed the wire (or a run of streamed updates, see
// Event.Frames); lifecycle kinds are normalised facts about
// sessions and turns; projection kinds are the changes the messages and
// compactions tables are rebuilt from.
type EventKind string

// Frame kinds.
const (
	EventRequest      EventKind = "request"      // has method and id
	EventNotification EventKind = "notification" // has method, no id
	EventResponse     EventKind = "response"     // has result
	EventErrorReply   EventKind = "error"        // has error
	EventInvalid      EventKind = "invalid"      // a line that is not a JSON-RPC message
)

// Lifecycle kinds.
const (
	EventSessionCreated      EventKind = "session_created"
	EventSessionLoaded       EventKind = "session_loaded"
	EventSessionClosed       EventKind = "session_closed"
	EventTurnStarted         EventKind = "turn_started"
	EventTurnCompleted       EventKind = "turn_completed"
	EventTurnCancelled       EventKind = "turn_cancelled"
	EventTurnFailed          EventKind = "turn_failed"
	EventCompactionStarted   EventKind = "compaction_started"
	EventCompactionCompleted EventKind = "compaction_completed"
)

// Projection kinds, written by the store in the same transaction as the
// change they describe (also EventMessagesChanged and EventSessionImported
// in projection.go). Their bodies are JSON records (projection.go).
const (
	EventMessageAppended EventKind = "message_appended"
	EventMessageUpdated  EventKind = "message_updated"
)

// IsFrame reports whether k is a raw frame kind.
func (k EventKind) IsFrame() bool {
	switch k {
	case EventRequest, EventNotification, EventResponse, EventErrorReply, EventInvalid:
		return true
	}
	return false
}

// Direction of a frame event; empty for lifecycle and projection events.
type Direction string

const (
	DirIn  Direction = "in"  // client → agent
	DirOut Direction = "out" // agent → client
)

// Event is one entry of the append-only event log. A stream is a session id,
// or a connection id for frames that belong to no session (initialize,
// session/new before it answers, malformed lines...).
type Event struct {
	ID     int64
	Stream string
	// Seq is assigned by the store: 1, 2, 3... per stream, gap-free, never
	// reused, in commit order.
	Seq          int64
	ConnectionID string // the connection that produced it; "" when unknown
	At           time.Time
	Direction    Direction
	Turn         int64 // the prompt turn it belongs to; 0 = none
	Kind         EventKind
	Method       string // the JSON-RPC method, for frames that have one (and responses: the request's)
	// Body is the frame's bytes exactly as read or written (without the
	// newline), or the event's JSON for lifecycle and projection kinds. A
	// run of outbound session/update notifications of one turn may share
	// an event, one frame per line, stored packed (PackRun): Frames gives
	// them back.
	Body []byte
}

// Connection is the record of one ACP connection (one crow-acp process
// serving one client).
type Connection struct {
	ID        string
	PID       int
	Host      string
	StartedAt time.Time
}

// EventFilter selects events of one stream.
type EventFilter struct {
	AfterSeq int64 // only events with Seq > AfterSeq
	Limit    int   // 0 = all
}

// Origin is who makes a write: the store stamps ConnectionID and Turn on
// the projection events the write records, inside its transaction, and
// appends Pending (buffered frames) before them in that same transaction:
// one commit instead of two, and seq order stays causal order. A write that
// fails stores none of them. An Origin is always passed explicitly
// (Recorder.WithOrigin), never carried by a context, so that no write is
// recorded without its connection by forgetting a context value.
type Origin struct {
	ConnectionID string
	Turn         int64
	Pending      []*Event
}

// Recorder is a Store whose writes can be attributed to the connection
// that makes them: the frame log records through one.
type Recorder interface {
	Store
	// WithOrigin returns the store with every write it makes recorded as
	// made by o (a cheap view of the same database).
	WithOrigin(o Origin) Store
}

// FrameLog is the append-only event log: the frame log's frames (written by
// journal), the lifecycle events and the projection events the messages are
// rebuilt from. Normal operation never updates or deletes an event: only
// DeleteSession (explicit) and PruneEvents (the documented retention
// option, frames only) remove any.
type FrameLog interface {
	// CreateConnection records a connection; StartedAt is set when zero.
	// ErrConflict if the id exists.
	CreateConnection(ctx context.Context, c *Connection) error
	// AppendEvents commits evs atomically and in order, assigning ID, Seq
	// (per Stream) and At when zero. Streams need not exist as sessions.
	AppendEvents(ctx context.Context, evs ...*Event) error
	// Events returns a stream's events in Seq order; none for an unknown
	// stream.
	Events(ctx context.Context, stream string, f EventFilter) ([]Event, error)
	// LastTurn is the highest Turn recorded on stream (0 if none).
	LastTurn(ctx context.Context, stream string) (int64, error)
	// PruneEvents deletes frame events (never lifecycle or projection
	// events, which the messages are rebuilt from) recorded before t, and
	// returns how many it deleted. Seqs are never reused.
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
}

// MessageUpdater rewrites a message in place: the assistant reply is stored
// when its stream starts and updated as it grows, so a crash keeps the part
// the user saw.
type MessageUpdater interface {
	// UpdateMessage writes m.Content, Reasoning, ToolCalls, Status, Meta and
	// TokenCount to the message with m.ID in session m.SessionID and records
	// a message_updated event. ErrNotFound if there is no such message.
	UpdateMessage(ctx context.Context, m *Message) error
	// InterruptStreaming marks every StatusStreaming message of the session
	// StatusInterrupted (a repair after the writing process died) and
	// returns how many it marked.
	InterruptStreaming(ctx context.Context, sessionID string) (int, error)
}

// Storage faults. Backends wrap these (together with the driver's error)
// so that the agent can tell the user what is wrong with the disk.
var (
	ErrStorageFull     = errors.New("storage full")
	ErrStorageReadOnly = errors.New("storage is read-only")
)
