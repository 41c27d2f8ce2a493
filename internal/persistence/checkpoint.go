package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Checkpoint limits: a file larger than the per-file limit, or one that
// would take the session's checkpoints past its total, is recorded as not
// restorable (the change it precedes still happens).
const (
	DefaultCheckpointFileLimit    = 8 << 20
	DefaultCheckpointSessionLimit = 256 << 20
)

// Checkpoint kinds.
const (
	CheckpointFile      = "file"       // one file before a turn's first change of it
	CheckpointTree      = "tree"       // a git work tree before a turn's first command
	CheckpointTreeAfter = "tree_after" // the same work tree at the turn's end
)

// FileState is a file's state: absent, or its mode bits and the SHA-256 of
// its bytes (hex).
type FileState struct {
	Exists bool   `json:"exists"`
	Mode   uint32 `json:"mode,omitempty"`
	Hash   string `json:"hash,omitempty"`
}

// Checkpoint is what a turn's change replaced: a file's state before the
// turn first changed it (Kind CheckpointFile), or a snapshot of a git work
// tree (CheckpointTree, CheckpointTreeAfter: Hash is the tree's object id
// in crow-acp's own object store, Path is empty). Checkpoints of a session
// are ordered by ID, the order they were taken in.
type Checkpoint struct {
	ID        int64
	SessionID string
	// Turn is the seq of the turn's prompt message: undoing a turn hides
	// the messages from that seq on.
	Turn int64
	Kind string
	// Path is slash-separated and relative to the session's cwd (absolute
	// for a file outside it).
	Path string
	// Before is the file's state; Before.Hash names its bytes in the
	// session's blobs unless Unrestorable says why they were not kept.
	Before       FileState
	Size         int64
	Unrestorable string
	// After is what the agent's change left (AfterChange); nil: not
	// recorded (the process died between the two, or a tree).
	After     *FileState
	CreatedAt time.Time
}

// CheckpointLimits bound what SaveCheckpoint keeps; zero values are the
// defaults.
type CheckpointLimits struct {
	File    int64 // bytes of one file
	Session int64 // bytes of all of a session's blobs
}

// OrDefaults is l with its zero values replaced by the defaults.
func (l CheckpointLimits) OrDefaults() CheckpointLimits {
	if l.File <= 0 {
		l.File = DefaultCheckpointFileLimit
	}
	if l.Session <= 0 {
		l.Session = DefaultCheckpointSessionLimit
	}
	return l
}

// ErrBlobLimit is returned (wrapped) by PutBlob when the bytes exceed a
// limit.
var ErrBlobLimit = errors.New("over the checkpoint limit")

// Hash is the SHA-256 of b in hex: a blob's key.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CheckpointStats are what `sessions show` counts.
type CheckpointStats struct {
	Files int   // file checkpoints
	Trees int   // work-tree snapshots
	Bytes int64 // bytes of the session's blobs (each content once)
}

// Blob is one content a session's checkpoints or undos keep.
type Blob struct {
	Hash string
	Data []byte
}

// Undo states.
const (
	UndoPending     = "pending"     // files being restored; an unfinished undo was interrupted
	UndoDone        = "done"        // restored; its messages are hidden
	UndoInterrupted = "interrupted" // a pending undo or redo found unfinished at start
	UndoRedoing     = "redoing"     // being redone
	UndoRedone      = "redone"      // redone; its messages are back
)

// Undo file actions.
const (
	UndoRestored   = "restored"    // written back to its bytes and mode before the turn
	UndoDeleted    = "deleted"     // created by the turns: removed
	UndoSkipped    = "skipped"     // changed since the agent wrote it, or could not be written
	UndoNotCovered = "not_covered" // its bytes were not kept (Checkpoint.Unrestorable)
	UndoUnchanged  = "unchanged"   // already as it was before the turn
)

// UndoFile is what an undo did, or plans to do, to one file.
type UndoFile struct {
	Path   string    `json:"path"`
	Action string    `json:"action"`
	Reason string    `json:"reason,omitempty"`
	Before FileState `json:"before"` // what the undo restores
	// Now is what was there when the undo ran, kept for redo (Now.Hash is
	// a blob of the session unless NowKept is false).
	Now     FileState `json:"now"`
	NowKept bool      `json:"nowKept,omitempty"`
	Diff    string    `json:"diff,omitempty"` // a skipped file's changes since the agent wrote it
}

// Undo is the record of one undo of the turns from FromTurn on.
type Undo struct {
	ID        int64
	SessionID string
	FromTurn  int64 // the first undone turn (its prompt's seq)
	State     string
	Force     bool
	Files     []UndoFile
	// Hidden are the messages the undo made inactive (seq >= FromTurn);
	// Shown those it made active again (compacted by a compaction the
	// undone turns made).
	Hidden, Shown []int64
	// LastSeq is the session's last seq when the undo finished: redo is
	// possible while nothing new was appended.
	LastSeq   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CheckpointStore keeps checkpoints, their blobs and undo records. Both
// backends keep one (backend.Store); everything is deleted with the
// session. Consumers hold the few methods they call (checkpoint.Store).
type CheckpointStore interface {
	// SaveCheckpoint stores c with data, the bytes of c.Before when it
	// exists, in one transaction: data is kept once per session under
	// Hash(data) unless it is over a limit, when c.Unrestorable says so.
	// A file checkpoint for a (session, turn, path) that has one is not
	// stored (the first wins): saved is false and c is left as it was.
	// ErrNotFound for an unknown session.
	SaveCheckpoint(ctx context.Context, c *Checkpoint, data []byte, l CheckpointLimits) (saved bool, err error)
	// SetCheckpointAfter records what the agent's change of path in turn
	// left. ErrNotFound when there is no such file checkpoint.
	SetCheckpointAfter(ctx context.Context, sessionID string, turn int64, path string, after FileState) error
	// Checkpoints lists a session's checkpoints of turns >= fromTurn, by
	// id. ErrNotFound for an unknown session.
	Checkpoints(ctx context.Context, sessionID string, fromTurn int64) ([]Checkpoint, error)
	// PutBlob keeps data once under Hash(data), within l; ErrBlobLimit
	// when it is over one.
	PutBlob(ctx context.Context, sessionID string, data []byte, l CheckpointLimits) (string, error)
	// Blob returns the bytes kept under hash; ErrNotFound when none are.
	Blob(ctx context.Context, sessionID, hash string) ([]byte, error)
	// Blobs returns every blob of a session, by hash (for an export).
	Blobs(ctx context.Context, sessionID string) ([]Blob, error)
	// CheckpointStats counts a session's checkpoints and blob bytes.
	CheckpointStats(ctx context.Context, sessionID string) (CheckpointStats, error)

	// CreateUndo stores u (State UndoPending or UndoRedoing) and sets its
	// ID and times. ErrConflict while another undo of the session is
	// pending or redoing.
	CreateUndo(ctx context.Context, u *Undo) error
	// UpdateUndo writes u's State and Files. Moving to UndoDone hides the
	// session's active messages with seq >= FromTurn and shows again those
	// compacted by a compaction made since that turn began (Hidden, Shown,
	// LastSeq are set on u); moving to UndoRedone (from UndoRedoing)
	// reverses that. Both are recorded as messages_changed events.
	// ErrConflict moving to UndoRedoing when the session has new messages
	// since the undo (LastSeq) or the undo is not UndoDone. ErrNotFound
	// for an unknown undo.
	UpdateUndo(ctx context.Context, u *Undo) error
	// Undos lists a session's undo records, oldest first.
	Undos(ctx context.Context, sessionID string) ([]Undo, error)
	// UnfinishedUndos lists the undos of every session that are pending or
	// redoing: interrupted by the death of their process.
	UnfinishedUndos(ctx context.Context) ([]Undo, error)
}
