package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// SessionDump is everything a store keeps about one session, as read back
// through the Store: what `crow-acp migrate` copies from one store to another.
type SessionDump struct {
	Session     Session
	Messages    []Message    // every message, active or not, in Seq order
	Compactions []Compaction // oldest first
	// What undo keeps (checkpoint.go), when the store keeps it: the
	// checkpoints by id, the undo records oldest first, and the blobs they
	// name (read by ReadBlobs; Dump leaves them out).
	Checkpoints []Checkpoint
	Undos       []Undo
	Blobs       []Blob
}

// Importer writes a whole session exactly as another store recorded it.
type Importer interface {
	// ImportSession stores d in one transaction: the session with its times
	// (UpdatedAt is not bumped), every message with its Seq, status,
	// activity and CreatedAt, every compaction record. The store assigns
	// new message and compaction ids, rewrites the references between them
	// (CompactedIDs, KeptIDs, SummaryMessageID, CompactedIntoID) and fills
	// the new ids into d. Seqs must be positive and strictly increasing; the
	// session's next append gets the seq after the last. ErrConflict if the
	// session exists; an error, storing nothing, if a reference names an id
	// that is not in d.
	ImportSession(ctx context.Context, d *SessionDump) error
}

// DumpSource is what Dump reads of a store.
type DumpSource interface {
	GetSession(ctx context.Context, id string) (*Session, error)
	Messages(ctx context.Context, sessionID string, f MessageFilter) ([]Message, error)
	Compactions(ctx context.Context, sessionID string) ([]Compaction, error)
}

// CheckpointSource is what Dump and ReadBlobs read of a store that keeps
// checkpoints.
type CheckpointSource interface {
	Checkpoints(ctx context.Context, sessionID string, fromTurn int64) ([]Checkpoint, error)
	Undos(ctx context.Context, sessionID string) ([]Undo, error)
	Blobs(ctx context.Context, sessionID string) ([]Blob, error)
}

// Dump reads session id from s. It reads the session again at the end and
// starts over (a few times) if its UpdatedAt moved, so that a session being
// written meanwhile is not read half old, half new. ErrNotFound for an
// unknown id.
func Dump(ctx context.Context, s DumpSource, id string) (*SessionDump, error) {
	for range 5 {
		sess, err := s.GetSession(ctx, id)
		if err != nil {
			return nil, err
		}
		msgs, err := s.Messages(ctx, id, MessageFilter{})
		if err != nil {
			return nil, err
		}
		comps, err := s.Compactions(ctx, id)
		if err != nil {
			return nil, err
		}
		again, err := s.GetSession(ctx, id)
		if err != nil {
			return nil, err
		}
		d := &SessionDump{Session: *sess, Messages: msgs, Compactions: comps}
		if cs, ok := s.(CheckpointSource); ok {
			if d.Checkpoints, err = cs.Checkpoints(ctx, id, 0); err != nil {
				return nil, err
			}
			if d.Undos, err = cs.Undos(ctx, id); err != nil {
				return nil, err
			}
		}
		if again.UpdatedAt.Equal(sess.UpdatedAt) {
			return d, nil
		}
	}
	return nil, fmt.Errorf("dump session %q: it keeps changing while being read; stop the processes writing it", id)
}

// ReadBlobs reads the blobs of d's session from s (none when s keeps no
// checkpoints): what an export or a copy carries with the checkpoints.
func (d *SessionDump) ReadBlobs(ctx context.Context, s DumpSource) error {
	cs, ok := s.(CheckpointSource)
	if !ok {
		return nil
	}
	var err error
	d.Blobs, err = cs.Blobs(ctx, d.Session.ID)
	return err
}

// Undone is the set of messages an undo (UndoDone) hid.
func (d *SessionDump) Undone() map[int64]bool {
	out := map[int64]bool{}
	for _, u := range d.Undos {
		if u.State == UndoDone {
			for _, id := range u.Hidden {
				out[id] = true
			}
		}
	}
	return out
}

// Digest is a SHA-256 over d's content in a canonical form that does not
// depend on which store holds it: ids are replaced by what they point at
// (a message by its Seq, a compaction by its position), times are UTC to
// the microsecond (what every store keeps), free text is compared as
// ValidText (what every store can keep), JSON byte for byte, and a nil slice
// differs from an empty one. Two stores holding the same session give the
// same digest.
func Digest(d *SessionDump) (string, error) {
	c, err := canonical(d)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

type canonicalDump struct {
	ID, Cwd, Title       string
	CreatedAt, UpdatedAt string
	Metadata             *string
	Messages             []canonicalMessage
	Compactions          []canonicalCompaction
	Checkpoints          []canonicalCheckpoint `json:",omitempty"`
	Undos                []canonicalUndo       `json:",omitempty"`
	Blobs                []string              `json:",omitempty"` // hash and length
}

type canonicalCheckpoint struct {
	Turn                     int64
	Kind, Path, Unrestorable string
	Before                   FileState
	After                    *FileState
	Size                     int64
	CreatedAt                string
}

type canonicalUndo struct {
	FromTurn, LastSeq    int64
	State                string
	Force                bool
	Files                []UndoFile
	Hidden, Shown        []int64 // seqs
	CreatedAt, UpdatedAt string
}

type canonicalMessage struct {
	Seq                       int64
	Role, Content, Reasoning  string
	ToolCallID, Status        string
	Parts                     []Part
	ToolCalls                 []ToolCall
	Meta                      *string
	Active                    bool
	CompactedInto, TokenCount int // CompactedInto: 1-based position of the compaction, 0 for none
	TokenEncoding             string
	CreatedAt                 string
	NilParts, NilToolCalls    bool
}

type canonicalCompaction struct {
	Policy                    string
	Compacted, Kept           []int64 // seqs
	NilCompacted, NilKept     bool
	TokensBefore, TokensAfter int
	Summary                   int64   // seq; 0 for none
	Added                     []int64 // seqs
	NilAdded                  bool
	MessagesBefore            int
	MessagesAfter             int
	Expanded                  bool
	Settings                  *string
	CreatedAt                 string
}

func canonical(d *SessionDump) (*canonicalDump, error) {
	seqOf := make(map[int64]int64, len(d.Messages))
	for _, m := range d.Messages {
		seqOf[m.ID] = m.Seq
	}
	posOf := make(map[int64]int, len(d.Compactions))
	for i, c := range d.Compactions {
		posOf[c.ID] = i + 1
	}
	seqs := func(what string, ids []int64) ([]int64, error) {
		out := make([]int64, len(ids))
		for i, id := range ids {
			seq, ok := seqOf[id]
			if !ok {
				return nil, fmt.Errorf("session %q: %s names message %d, which it does not have", d.Session.ID, what, id)
			}
			out[i] = seq
		}
		return out, nil
	}

	out := &canonicalDump{
		ID: d.Session.ID, Cwd: d.Session.Cwd, Title: ValidText(d.Session.Title),
		CreatedAt: canonicalTime(d.Session.CreatedAt), UpdatedAt: canonicalTime(d.Session.UpdatedAt),
		Metadata: canonicalJSON(d.Session.Metadata),
	}
	for _, m := range d.Messages {
		cm := canonicalMessage{
			Seq: m.Seq, Role: string(m.Role), Content: ValidText(m.Content), Reasoning: ValidText(m.Reasoning),
			ToolCallID: ValidText(m.ToolCallID), Status: string(m.Status), Parts: m.Parts, ToolCalls: m.ToolCalls,
			NilParts: m.Parts == nil, NilToolCalls: m.ToolCalls == nil,
			Meta: canonicalJSON(m.Meta), Active: m.IsActive, TokenCount: m.TokenCount,
			TokenEncoding: m.TokenEncoding, CreatedAt: canonicalTime(m.CreatedAt),
		}
		if m.CompactedIntoID != nil {
			pos, ok := posOf[*m.CompactedIntoID]
			if !ok {
				return nil, fmt.Errorf("session %q: message %d is compacted into compaction %d, which it does not have",
					d.Session.ID, m.Seq, *m.CompactedIntoID)
			}
			cm.CompactedInto = pos
		}
		out.Messages = append(out.Messages, cm)
	}
	for i, c := range d.Compactions {
		cc := canonicalCompaction{
			Policy: c.Policy, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
			NilCompacted: c.CompactedIDs == nil, NilKept: c.KeptIDs == nil, NilAdded: c.AddedIDs == nil,
			MessagesBefore: c.MessagesBefore, MessagesAfter: c.MessagesAfter, Expanded: c.Expanded,
			Settings: canonicalJSON(c.Settings), CreatedAt: canonicalTime(c.CreatedAt),
		}
		var err error
		if cc.Compacted, err = seqs(fmt.Sprintf("compaction %d", i+1), c.CompactedIDs); err != nil {
			return nil, err
		}
		if cc.Kept, err = seqs(fmt.Sprintf("compaction %d", i+1), c.KeptIDs); err != nil {
			return nil, err
		}
		if cc.Added, err = seqs(fmt.Sprintf("compaction %d", i+1), c.AddedIDs); err != nil {
			return nil, err
		}
		if c.SummaryMessageID != nil {
			s, err := seqs(fmt.Sprintf("compaction %d summary", i+1), []int64{*c.SummaryMessageID})
			if err != nil {
				return nil, err
			}
			cc.Summary = s[0]
		}
		out.Compactions = append(out.Compactions, cc)
	}
	for _, c := range d.Checkpoints {
		out.Checkpoints = append(out.Checkpoints, canonicalCheckpoint{Turn: c.Turn, Kind: c.Kind, Path: ValidText(c.Path),
			Unrestorable: ValidText(c.Unrestorable), Before: c.Before, After: c.After, Size: c.Size, CreatedAt: canonicalTime(c.CreatedAt)})
	}
	for i, u := range d.Undos {
		cu := canonicalUndo{FromTurn: u.FromTurn, LastSeq: u.LastSeq, State: u.State, Force: u.Force, Files: u.Files,
			CreatedAt: canonicalTime(u.CreatedAt), UpdatedAt: canonicalTime(u.UpdatedAt)}
		var err error
		if cu.Hidden, err = seqs(fmt.Sprintf("undo %d", i+1), u.Hidden); err != nil {
			return nil, err
		}
		if cu.Shown, err = seqs(fmt.Sprintf("undo %d", i+1), u.Shown); err != nil {
			return nil, err
		}
		out.Undos = append(out.Undos, cu)
	}
	for _, b := range d.Blobs {
		out.Blobs = append(out.Blobs, fmt.Sprintf("%s:%d", b.Hash, len(b.Data)))
	}
	slices.Sort(out.Blobs)
	return out, nil
}

func canonicalTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z")
}

// canonicalJSON keeps JSON as its exact bytes (as ValidText); nil for
// absent.
func canonicalJSON(v json.RawMessage) *string {
	if len(v) == 0 {
		return nil
	}
	s := ValidText(string(v))
	return &s
}

// Check reports what would stop d from being imported: an empty session id,
// seqs that are not positive and strictly increasing, or a reference
// (CompactedIDs, KeptIDs, AddedIDs, SummaryMessageID, CompactedIntoID) to an id that is
// not in d.
func (d *SessionDump) Check() error {
	if d.Session.ID == "" {
		return fmt.Errorf("session id is empty")
	}
	msgIDs := make(map[int64]bool, len(d.Messages))
	var last int64
	for i, m := range d.Messages {
		if m.Seq <= last {
			return fmt.Errorf("message %d: seq %d after %d: seqs must be positive and increasing", i, m.Seq, last)
		}
		last = m.Seq
		if m.SessionID != "" && m.SessionID != d.Session.ID {
			return fmt.Errorf("message %d belongs to session %q", i, m.SessionID)
		}
		msgIDs[m.ID] = true
	}
	compIDs := make(map[int64]bool, len(d.Compactions))
	for i, c := range d.Compactions {
		for _, ids := range [][]int64{c.CompactedIDs, c.KeptIDs, c.AddedIDs} {
			for _, id := range ids {
				if !msgIDs[id] {
					return fmt.Errorf("compaction %d names message %d, which is not in the session", i, id)
				}
			}
		}
		if c.SummaryMessageID != nil && !msgIDs[*c.SummaryMessageID] {
			return fmt.Errorf("compaction %d: summary message %d is not in the session", i, *c.SummaryMessageID)
		}
		compIDs[c.ID] = true
	}
	for i, m := range d.Messages {
		if m.CompactedIntoID != nil && !compIDs[*m.CompactedIntoID] {
			return fmt.Errorf("message %d: compacted into %d, which is not a compaction of the session", i, *m.CompactedIntoID)
		}
	}
	for i, u := range d.Undos {
		for _, ids := range [][]int64{u.Hidden, u.Shown} {
			for _, id := range ids {
				if !msgIDs[id] {
					return fmt.Errorf("undo %d names message %d, which is not in the session", i, id)
				}
			}
		}
	}
	for i, b := range d.Blobs {
		if Hash(b.Data) != b.Hash {
			return fmt.Errorf("blob %d: its bytes do not have the hash %q", i, b.Hash)
		}
	}
	for i, c := range d.Checkpoints {
		switch c.Kind {
		case CheckpointFile, CheckpointTree, CheckpointTreeAfter:
		default:
			return fmt.Errorf("checkpoint %d: unknown kind %q", i, c.Kind)
		}
	}
	return nil
}

// LastSeq is the seq of d's last message, 0 without messages.
func (d *SessionDump) LastSeq() int64 {
	if len(d.Messages) == 0 {
		return 0
	}
	return d.Messages[len(d.Messages)-1].Seq
}

// RenumberMessages replaces each message id c names by newID[id] (the ids
// a store gave the messages on import).
func (c *Compaction) RenumberMessages(newID map[int64]int64) {
	c.CompactedIDs = remap(c.CompactedIDs, newID)
	c.KeptIDs = remap(c.KeptIDs, newID)
	c.AddedIDs = remap(c.AddedIDs, newID)
	if c.SummaryMessageID != nil {
		id := newID[*c.SummaryMessageID]
		c.SummaryMessageID = &id
	}
}

// Remap returns ids with each replaced by newID[id] (nil stays nil).
func Remap(ids []int64, newID map[int64]int64) []int64 { return remap(ids, newID) }

// remap returns ids with each replaced by newID[id].
func remap(ids []int64, newID map[int64]int64) []int64 {
	if ids == nil {
		return nil
	}
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = newID[id]
	}
	return out
}

// Renumber gives d's messages and compactions, in order, the ids a store
// assigned on import, and rewrites every reference between them.
func (d *SessionDump) Renumber(msgIDs, compIDs []int64) {
	newMsg := make(map[int64]int64, len(msgIDs))
	for i := range d.Messages {
		newMsg[d.Messages[i].ID] = msgIDs[i]
	}
	newComp := make(map[int64]int64, len(compIDs))
	for i := range d.Compactions {
		newComp[d.Compactions[i].ID] = compIDs[i]
	}
	for i := range d.Messages {
		m := &d.Messages[i]
		m.ID, m.SessionID = msgIDs[i], d.Session.ID
		if m.CompactedIntoID != nil {
			id := newComp[*m.CompactedIntoID]
			m.CompactedIntoID = &id
		}
	}
	for i := range d.Compactions {
		c := &d.Compactions[i]
		c.ID, c.SessionID = compIDs[i], d.Session.ID
		c.RenumberMessages(newMsg)
	}
	for i := range d.Undos {
		u := &d.Undos[i]
		u.SessionID, u.Hidden, u.Shown = d.Session.ID, remap(u.Hidden, newMsg), remap(u.Shown, newMsg)
	}
	for i := range d.Checkpoints {
		d.Checkpoints[i].SessionID = d.Session.ID
	}
}
