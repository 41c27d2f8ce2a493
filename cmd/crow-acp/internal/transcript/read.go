package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/crow-acp/crow-acp/persistence"
)

// MaxExportBytes bounds a JSON export ReadJSON reads: a file named on the
// command line may be anything.
const MaxExportBytes = 1 << 30

// exportIn is the JSON export as ReadJSON reads it.
type exportIn struct {
	Format      string          `json:"format"`
	Session     SessionJSON     `json:"session"`
	Messages    []messageOut    `json:"messages"`
	Compactions []compactionOut `json:"compactions"`
}

// ReadJSON reads a session written by WriteJSON (sessions export --format
// json), by this version or an earlier one, and checks that it is whole:
// every id a compaction or message names is in it (SessionDump.Check). An
// export from before compaction records carried addedIds and expanded
// gets them from what it has: the summary, and whether the compacted
// messages are active again.
func ReadJSON(r io.Reader) (*persistence.SessionDump, error) {
	lr := &io.LimitedReader{R: r, N: MaxExportBytes + 1}
	var in exportIn
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&in); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("not a session export: larger than %d MiB", MaxExportBytes>>20)
		}
		return nil, fmt.Errorf("not a session export: %w", err)
	}
	if in.Format != Format {
		return nil, fmt.Errorf("not a session export: format %q, want %q", in.Format, Format)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not a session export: more after the session's JSON")
	}
	d := &persistence.SessionDump{Session: persistence.Session{ID: in.Session.ID, Cwd: in.Session.Cwd, Title: in.Session.Title,
		CreatedAt: in.Session.CreatedAt, UpdatedAt: in.Session.UpdatedAt, Metadata: in.Session.Metadata}}
	active := make(map[int64]bool, len(in.Messages))
	for _, m := range in.Messages {
		d.Messages = append(d.Messages, persistence.Message{ID: m.ID, SessionID: d.Session.ID, Seq: m.Seq, Role: m.Role,
			Content: m.Content, Parts: m.Parts, Reasoning: m.Reasoning, ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls,
			Status: persistence.MessageStatus(m.Status), Meta: m.Meta, IsActive: m.Active, CompactedIntoID: m.CompactedInto,
			TokenCount: m.TokenCount, TokenEncoding: m.TokenEncoding, CreatedAt: m.CreatedAt})
		active[m.ID] = m.Active
	}
	for _, c := range in.Compactions {
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
	if err := d.Check(); err != nil {
		return nil, fmt.Errorf("not a whole session export: %w", err)
	}
	return d, nil
}
