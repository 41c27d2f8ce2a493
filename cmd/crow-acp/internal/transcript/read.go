package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// MaxExportBytes bounds a JSON export ReadJSON reads: a file named on the
// command line may be anything, and what is read is held in memory (a
// session's messages, then the rows and the import's record a store
// writes in one transaction: an import's peak RSS measured 7 to 10 times
// the file's size).
const MaxExportBytes = 256 << 20

// ReadJSON reads a session written by WriteJSON (sessions export --format
// json), by this version or an earlier one, and checks that it is whole:
// every id a compaction or message names is in it (SessionDump.Check). An
// export from before compaction records carried addedIds and expanded
// gets them from what it has: the summary, and whether the compacted
// messages are active again. The messages are decoded one at a time as
// they are read: neither the file nor its messages in the export's shape
// are held whole.
func ReadJSON(r io.Reader) (*persistence.SessionDump, error) {
	lr := &io.LimitedReader{R: r, N: MaxExportBytes + 1}
	d, err := readExport(json.NewDecoder(lr))
	if err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("not a session export: larger than %d MiB (crow-acp migrate copies sessions between databases without a file)", MaxExportBytes>>20)
		}
		return nil, fmt.Errorf("not a session export: %w", err)
	}
	if err := d.Check(); err != nil {
		return nil, fmt.Errorf("not a whole session export: %w", err)
	}
	return d, nil
}

// readExport decodes the export's object key by key, each message on its
// own.
func readExport(dec *json.Decoder) (*persistence.SessionDump, error) {
	if err := wantDelim(dec, '{'); err != nil {
		return nil, err
	}
	var format string
	var session SessionJSON
	var comps []compactionOut
	var cps []checkpointOut
	var undos []undoOut
	var blobs []blobOut
	d := &persistence.SessionDump{}
	active := make(map[int64]bool)
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch key {
		case "format":
			if err := dec.Decode(&format); err != nil {
				return nil, err
			}
			if format != Format {
				return nil, fmt.Errorf("format %q, want %q", format, Format)
			}
		case "session":
			err = dec.Decode(&session)
		case "messages":
			d.Messages, err = readMessages(dec, active)
		case "compactions":
			err = dec.Decode(&comps)
		case "checkpoints":
			err = dec.Decode(&cps)
		case "undos":
			err = dec.Decode(&undos)
		case "blobs":
			err = dec.Decode(&blobs)
		default:
			err = dec.Decode(new(json.RawMessage)) // a field of a later version
		}
		if err != nil {
			return nil, err
		}
	}
	if err := wantDelim(dec, '}'); err != nil {
		return nil, err
	}
	if format != Format {
		return nil, fmt.Errorf("format %q, want %q", format, Format)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more after the session's JSON")
	}
	d.Session = persistence.Session{ID: session.ID, Cwd: session.Cwd, Title: session.Title,
		CreatedAt: session.CreatedAt, UpdatedAt: session.UpdatedAt, Metadata: session.Metadata}
	for i := range d.Messages {
		d.Messages[i].SessionID = d.Session.ID
	}
	for _, c := range comps {
		x := persistence.Compaction{ID: c.ID, SessionID: d.Session.ID, Policy: c.Policy, CompactedIDs: c.CompactedIDs,
			KeptIDs: c.KeptIDs, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter, SummaryMessageID: c.SummaryMessageID,
			AddedIDs: c.AddedIDs, MessagesBefore: c.MessagesBefore, MessagesAfter: c.MessagesAfter, Expanded: c.Expanded,
			Settings: c.Settings, CreatedAt: c.CreatedAt}
		if x.AddedIDs == nil && x.SummaryMessageID != nil {
			x.AddedIDs = []int64{*x.SummaryMessageID}
		}
		if !x.Expanded && len(x.CompactedIDs) > 0 && active[x.CompactedIDs[0]] {
			x.Expanded = true
		}
		d.Compactions = append(d.Compactions, x)
	}
	for _, c := range cps {
		d.Checkpoints = append(d.Checkpoints, persistence.Checkpoint{ID: c.ID, SessionID: d.Session.ID, Turn: c.Turn, Kind: c.Kind,
			Path: c.Path, Before: c.Before, Size: c.Size, Unrestorable: c.Unrestorable, After: c.After, CreatedAt: c.CreatedAt})
	}
	for _, u := range undos {
		d.Undos = append(d.Undos, persistence.Undo{ID: u.ID, SessionID: d.Session.ID, FromTurn: u.FromTurn, State: u.State,
			Force: u.Force, Files: u.Files, Hidden: u.Hidden, Shown: u.Shown, LastSeq: u.LastSeq, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt})
	}
	for _, b := range blobs {
		d.Blobs = append(d.Blobs, persistence.Blob{Hash: b.Hash, Data: b.Data})
	}
	return d, nil
}

// readMessages decodes the messages array one message at a time, noting
// in active whether each is.
func readMessages(dec *json.Decoder, active map[int64]bool) ([]persistence.Message, error) {
	switch t, err := dec.Token(); {
	case err != nil:
		return nil, err
	case t == nil:
		return nil, nil // null, as an absent array
	case t != json.Delim('['):
		return nil, fmt.Errorf("messages: %v where an array was expected", t)
	}
	var out []persistence.Message
	for dec.More() {
		var m messageOut
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		if len(out) == cap(out) {
			// Doubled: append grows a large slice by a quarter, and a
			// session of small messages then allocated 5 times its
			// messages on the way.
			out = slices.Grow(out, max(len(out), 16))
		}
		out = append(out, persistence.Message{ID: m.ID, Seq: m.Seq, Role: m.Role,
			Content: m.Content, Parts: m.Parts, Reasoning: m.Reasoning, ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls,
			Status: persistence.MessageStatus(m.Status), Meta: m.Meta, IsActive: m.Active, CompactedIntoID: m.CompactedInto,
			TokenCount: m.TokenCount, TokenEncoding: m.TokenEncoding, CreatedAt: m.CreatedAt})
		active[m.ID] = m.Active
	}
	return out, wantDelim(dec, ']')
}

// wantDelim reads the next token, which must be delim.
func wantDelim(dec *json.Decoder, delim json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != delim {
		return fmt.Errorf("%v where %v was expected", t, delim)
	}
	return nil
}
