// Package transcript writes stored sessions for people and tools: the list
// of sessions, one session as text (sessions show), as Markdown or as the
// versioned JSON export (sessions export). It reads a session through
// persistence.Dump, so a session being written meanwhile is never exported
// half old, half new.
//
// What it writes is stored model text, and people print it on a terminal
// (a Markdown file is read with cat and less as often as in an editor):
// the text forms pass everything stored through termsafe, so controls,
// escape sequences and bidi controls show as visible stand-ins; the JSON
// forms keep every value exact and write those characters as \u escapes.
package transcript

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// toolNames maps tool call ids to the tool's name, to label results.
func toolNames(d *persistence.SessionDump) map[string]string {
	out := make(map[string]string)
	for _, m := range d.Messages {
		for _, c := range m.ToolCalls {
			out[c.ID] = c.Name
		}
	}
	return out
}

func compactedCount(d *persistence.SessionDump) int {
	n := 0
	for _, m := range d.Messages {
		if !m.IsActive {
			n++
		}
	}
	return n
}

// --- JSON: a stable, documented shape (not the store's internals) ---

// Format names the JSON export's version; a change that breaks readers
// gets a new one.
const Format = "crow-acp.session.v1"

// SessionJSON is a session's header in the JSON export and in the JSON
// lines of `sessions list --json`.
type SessionJSON struct {
	ID        string          `json:"id"`
	Cwd       string          `json:"cwd"`
	Title     string          `json:"title,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	// Parent is the session whose subagent ran this one (agent/subagent.go).
	Parent string `json:"parentSessionId,omitempty"`
}

// Session is s in the export's shape.
func Session(s persistence.Session) SessionJSON {
	return SessionJSON{ID: s.ID, Cwd: s.Cwd, Title: s.Title, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(), Metadata: s.Metadata,
		Parent: agent.SubagentParent(&s)}
}

type messageOut struct {
	ID            int64                  `json:"id"`
	Seq           int64                  `json:"seq"`
	Role          persistence.Role       `json:"role"`
	Content       string                 `json:"content"`
	Parts         []persistence.Part     `json:"parts,omitempty"`
	Reasoning     string                 `json:"reasoning,omitempty"`
	ToolCallID    string                 `json:"toolCallId,omitempty"`
	ToolCalls     []persistence.ToolCall `json:"toolCalls,omitempty"`
	Status        string                 `json:"status"`
	Active        bool                   `json:"active"`
	CompactedInto *int64                 `json:"compactedInto,omitempty"`
	TokenCount    int                    `json:"tokenCount,omitempty"`
	TokenEncoding string                 `json:"tokenEncoding,omitempty"` // the tokenizer tokenCount is of
	Meta          json.RawMessage        `json:"meta,omitempty"`
	CreatedAt     time.Time              `json:"createdAt"`
}

type compactionOut struct {
	ID               int64           `json:"id"`
	Policy           string          `json:"policy"`
	CompactedIDs     []int64         `json:"compactedIds"`
	KeptIDs          []int64         `json:"keptIds"`
	TokensBefore     int             `json:"tokensBefore"`
	TokensAfter      int             `json:"tokensAfter"`
	SummaryMessageID *int64          `json:"summaryMessageId,omitempty"`
	AddedIDs         []int64         `json:"addedIds,omitempty"`
	MessagesBefore   int             `json:"messagesBefore,omitempty"`
	MessagesAfter    int             `json:"messagesAfter,omitempty"`
	Expanded         bool            `json:"expanded,omitempty"`
	Settings         json.RawMessage `json:"settings,omitempty"`
	CreatedAt        time.Time       `json:"createdAt"`
}

// checkpointOut is a checkpoint (undo's record of a file before a turn
// changed it, or of a work tree) in the export.
type checkpointOut struct {
	ID           int64                  `json:"id"`
	Turn         int64                  `json:"turn"`
	Kind         string                 `json:"kind"`
	Path         string                 `json:"path,omitempty"`
	Before       persistence.FileState  `json:"before"`
	Size         int64                  `json:"size,omitempty"`
	Unrestorable string                 `json:"unrestorable,omitempty"`
	After        *persistence.FileState `json:"after,omitempty"`
	CreatedAt    time.Time              `json:"createdAt"`
}

type undoOut struct {
	ID        int64                  `json:"id"`
	FromTurn  int64                  `json:"fromTurn"`
	State     string                 `json:"state"`
	Force     bool                   `json:"force,omitempty"`
	Files     []persistence.UndoFile `json:"files"`
	Hidden    []int64                `json:"hiddenIds,omitempty"`
	Shown     []int64                `json:"shownIds,omitempty"`
	LastSeq   int64                  `json:"lastSeq,omitempty"`
	CreatedAt time.Time              `json:"createdAt"`
	UpdatedAt time.Time              `json:"updatedAt"`
}

// blobOut is one content the checkpoints keep (base64).
type blobOut struct {
	Hash string `json:"sha256"`
	Data []byte `json:"data"`
}

// WriteJSON writes d as the versioned JSON export: every message,
// compacted ones included, the compaction records, and what undo keeps
// (checkpoints, undo records and the bytes they name, when d has them).
func WriteJSON(w io.Writer, d *persistence.SessionDump) error {
	out := struct {
		Format      string          `json:"format"`
		Session     SessionJSON     `json:"session"`
		Messages    []messageOut    `json:"messages"`
		Compactions []compactionOut `json:"compactions"`
		Checkpoints []checkpointOut `json:"checkpoints,omitempty"`
		Undos       []undoOut       `json:"undos,omitempty"`
		Blobs       []blobOut       `json:"blobs,omitempty"`
	}{Format: Format, Session: Session(d.Session), Messages: []messageOut{}, Compactions: []compactionOut{}}
	for _, c := range d.Checkpoints {
		out.Checkpoints = append(out.Checkpoints, checkpointOut{ID: c.ID, Turn: c.Turn, Kind: c.Kind, Path: c.Path, Before: c.Before,
			Size: c.Size, Unrestorable: c.Unrestorable, After: c.After, CreatedAt: c.CreatedAt.UTC()})
	}
	for _, u := range d.Undos {
		out.Undos = append(out.Undos, undoOut{ID: u.ID, FromTurn: u.FromTurn, State: u.State, Force: u.Force, Files: u.Files,
			Hidden: u.Hidden, Shown: u.Shown, LastSeq: u.LastSeq, CreatedAt: u.CreatedAt.UTC(), UpdatedAt: u.UpdatedAt.UTC()})
	}
	for _, b := range d.Blobs {
		out.Blobs = append(out.Blobs, blobOut{Hash: b.Hash, Data: b.Data})
	}
	for _, m := range d.Messages {
		out.Messages = append(out.Messages, messageOut{
			ID: m.ID, Seq: m.Seq, Role: m.Role, Content: m.Content, Parts: m.Parts, Reasoning: m.Reasoning,
			ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls, Status: string(m.Status), Active: m.IsActive,
			CompactedInto: m.CompactedIntoID, TokenCount: m.TokenCount, TokenEncoding: m.TokenEncoding, Meta: m.Meta, CreatedAt: m.CreatedAt.UTC(),
		})
	}
	for _, c := range d.Compactions {
		out.Compactions = append(out.Compactions, compactionOut{
			ID: c.ID, Policy: c.Policy, CompactedIDs: c.CompactedIDs, KeptIDs: c.KeptIDs, TokensBefore: c.TokensBefore,
			TokensAfter: c.TokensAfter, SummaryMessageID: c.SummaryMessageID, AddedIDs: c.AddedIDs, MessagesBefore: c.MessagesBefore,
			MessagesAfter: c.MessagesAfter, Expanded: c.Expanded, Settings: c.Settings, CreatedAt: c.CreatedAt.UTC(),
		})
	}
	return encodeJSON(w, out, "  ")
}

// encodeJSON writes v as one JSON document with a newline, every
// character a terminal would act on written as a \u escape.
func encodeJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(buf.Bytes()))
	return err
}

// --- Text, for `sessions show` ---

// WriteText writes d as plain text, compacted messages marked.
func WriteText(w io.Writer, d *persistence.SessionDump) {
	s := d.Session
	fmt.Fprintf(w, "session   %s\n", termsafe.Line(s.ID))
	if s.Title != "" {
		fmt.Fprintf(w, "title     %s\n", termsafe.Line(s.Title))
	}
	if agent.IsArchived(&s) {
		fmt.Fprintf(w, "archived  yes (crow-acp sessions unarchive %s lists it again)\n", termsafe.Line(s.ID))
	}
	fmt.Fprintf(w, "directory %s\n", termsafe.Line(s.Cwd))
	if from, at, ok := agent.ForkedFrom(&s); ok {
		fmt.Fprintf(w, "forked    from %s on %s\n", termsafe.Line(from), LocalTime(at))
	}
	fmt.Fprintf(w, "created   %s\n", LocalTime(s.CreatedAt))
	fmt.Fprintf(w, "updated   %s\n", LocalTime(s.UpdatedAt))
	fmt.Fprintf(w, "messages  %d", len(d.Messages))
	undone := d.Undone()
	if n := compactedCount(d) - len(undone); n > 0 {
		fmt.Fprintf(w, " (%d compacted, %s)", n, Plural(len(d.Compactions), "compaction"))
	}
	if len(undone) > 0 {
		fmt.Fprintf(w, " (%d undone)", len(undone))
	}
	fmt.Fprintln(w)
	if line := checkpointLine(d); line != "" {
		fmt.Fprintln(w, line)
	}
	writeCost(w, agent.SessionCost(&s))
	names := toolNames(d)
	for _, m := range d.Messages {
		fmt.Fprintf(w, "\n── %s", messageHeading(m, names))
		switch {
		case undone[m.ID]:
			fmt.Fprint(w, " [undone]")
		case !m.IsActive:
			fmt.Fprint(w, " [compacted]")
		}
		if m.Status != "" && m.Status != persistence.StatusComplete {
			fmt.Fprintf(w, " [%s]", m.Status)
		}
		fmt.Fprintln(w)
		if m.Reasoning != "" {
			fmt.Fprintf(w, "(thinking) %s\n", termsafe.Text(strings.TrimSpace(m.Reasoning)))
		}
		if text := strings.TrimRight(m.Content, "\n"); text != "" {
			fmt.Fprintln(w, termsafe.Text(text))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "→ %s %s\n", termsafe.Line(c.Name), termsafe.Line(OneLine(c.Arguments, 200)))
		}
	}
}

// checkpointLine says how many files and work-tree snapshots the
// session's checkpoints hold, and the bytes kept; "" without any.
func checkpointLine(d *persistence.SessionDump) string {
	files, trees := 0, 0
	for _, c := range d.Checkpoints {
		if c.Kind == persistence.CheckpointFile {
			files++
		} else {
			trees++
		}
	}
	if files == 0 && trees == 0 {
		return ""
	}
	var bytes int64
	seen := map[string]bool{}
	for _, c := range d.Checkpoints {
		if c.Kind == persistence.CheckpointFile && c.Before.Hash != "" && c.Unrestorable == "" && !seen[c.Before.Hash] {
			seen[c.Before.Hash] = true
			bytes += c.Size
		}
	}
	line := fmt.Sprintf("checkpoints %s, %s, %d bytes kept", Plural(files, "file"), Plural(trees, "work-tree snapshot"), bytes)
	if n := len(d.Undos); n > 0 {
		line += fmt.Sprintf("; %s", Plural(n, "undo"))
	}
	return line
}

// writeCost prints the session's total model cost, one line per currency
// (none for a session whose models had no prices).
func writeCost(w io.Writer, cost map[string]float64) {
	for _, cur := range slices.Sorted(maps.Keys(cost)) {
		fmt.Fprintf(w, "cost      %s %s (model requests so far, at the configured prices)\n", strconv.FormatFloat(cost[cur], 'f', -1, 64), termsafe.Line(cur))
	}
}

func messageHeading(m persistence.Message, names map[string]string) string {
	switch m.Role {
	case persistence.RoleTool:
		if n := names[m.ToolCallID]; n != "" {
			return "tool result: " + termsafe.Line(n)
		}
		return "tool result"
	case persistence.RoleSummary:
		return "summary of earlier messages"
	default:
		return string(m.Role)
	}
}

// --- Markdown, for `sessions export` ---

// WriteMarkdown writes d as a Markdown document for people.
func WriteMarkdown(w io.Writer, d *persistence.SessionDump) error {
	s := d.Session
	title := termsafe.Line(s.Title)
	if title == "" {
		title = "Session " + s.ID
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "- Session: `%s`\n- Directory: `%s`\n- Created: %s\n- Updated: %s\n- Messages: %d\n",
		s.ID, s.Cwd, s.CreatedAt.UTC().Format(time.RFC3339), s.UpdatedAt.UTC().Format(time.RFC3339), len(d.Messages))
	undone := d.Undone()
	if n := compactedCount(d) - len(undone); n > 0 {
		fmt.Fprintf(&b, "- Compacted: %s in %s (kept below, marked)\n", Plural(n, "message"), Plural(len(d.Compactions), "compaction"))
	}
	if len(undone) > 0 {
		fmt.Fprintf(&b, "- Undone: %s (kept below, marked)\n", Plural(len(undone), "message"))
	}
	names := toolNames(d)
	for _, m := range d.Messages {
		heading := map[persistence.Role]string{
			persistence.RoleUser: "User", persistence.RoleAssistant: "Assistant",
			persistence.RoleTool: "Tool result", persistence.RoleSummary: "Summary of earlier messages",
		}[m.Role]
		if heading == "" {
			heading = string(m.Role)
		}
		if m.Role == persistence.RoleTool && names[m.ToolCallID] != "" {
			heading += ": `" + names[m.ToolCallID] + "`"
		}
		var marks []string
		switch {
		case undone[m.ID]:
			marks = append(marks, "undone")
		case !m.IsActive:
			marks = append(marks, "compacted")
		}
		if m.Status != "" && m.Status != persistence.StatusComplete {
			marks = append(marks, string(m.Status))
		}
		if len(marks) > 0 {
			heading += " *(" + strings.Join(marks, ", ") + ")*"
		}
		fmt.Fprintf(&b, "\n## %s\n\n", heading)
		if m.Reasoning != "" {
			fmt.Fprintf(&b, "<details><summary>Thinking</summary>\n\n%s\n\n</details>\n\n", strings.TrimSpace(m.Reasoning))
		}
		switch m.Role {
		case persistence.RoleTool:
			b.WriteString(fence(m.Content, ""))
		default:
			if text := strings.TrimSpace(m.Content); text != "" {
				b.WriteString(text + "\n")
			}
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "\n**Tool call** `%s` (`%s`)\n\n", c.Name, c.ID)
			b.WriteString(fence(prettyJSON(c.Arguments), "json"))
		}
	}
	// The one pass that makes stored text safe to cat: the document is
	// for people, the exact bytes are in the JSON export.
	_, err := io.WriteString(w, termsafe.Text(b.String()))
	return err
}

// fence wraps text in a code fence longer than any backtick run inside it.
func fence(text, lang string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + f + "\n"
}

func prettyJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

// Plural is "1 message", "2 messages".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// WriteList writes sessions as a table, newest first as given; asJSON
// writes JSON lines, one session each.
func WriteList(w io.Writer, sessions []persistence.Session, asJSON bool) error {
	if asJSON {
		for _, s := range sessions {
			if err := encodeJSON(w, Session(s), ""); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A PARENT column only when a subagent's child is listed: the
	// subagent parent, the session whose task call ran it.
	parents := make([]string, len(sessions))
	withParent := false
	for i := range sessions {
		parents[i] = agent.SubagentParent(&sessions[i])
		withParent = withParent || parents[i] != ""
	}
	if withParent {
		fmt.Fprintln(tw, "ID\tUPDATED\tTITLE\tPARENT\tDIRECTORY")
	} else {
		fmt.Fprintln(tw, "ID\tUPDATED\tTITLE\tDIRECTORY")
	}
	for i, s := range sessions {
		title := termsafe.Line(OneLine(s.Title, 60))
		if title == "" {
			title = "-"
		}
		if from, _, ok := agent.ForkedFrom(&s); ok {
			title += " [fork of " + termsafe.Line(from) + "]"
		}
		if agent.IsArchived(&s) {
			title += " (archived)"
		}
		if withParent {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termsafe.Line(s.ID), LocalTime(s.UpdatedAt), title, cmp.Or(termsafe.Line(parents[i]), "-"), termsafe.Line(s.Cwd))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termsafe.Line(s.ID), LocalTime(s.UpdatedAt), title, termsafe.Line(s.Cwd))
	}
	return tw.Flush()
}

// LocalTime formats a stored time for people, in the local time zone.
func LocalTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// OneLine shortens s to one line of at most n runes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
