package compaction

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Policies, as recorded in persistence.Compaction.Policy.
const (
	PolicyPrune     = "prune"     // old tool output replaced by a marker
	PolicySummarize = "summarize" // older turns summarised by the model
	PolicyFallback  = "fallback"  // older turns summarised without the model
	PolicyDrop      = "drop"      // oldest turns dropped, pinned state kept
)

// Plan is one policy's result, ready to be applied in one transaction: the
// Compacted messages become inactive and the Added ones are appended.
type Plan struct {
	Policy    string
	Compacted []int64 // active messages made inactive
	Kept      []int64 // active messages left as they are
	Added     []*persistence.Message
	// Token and message counts of the whole request (fixed part included)
	// before and after.
	TokensBefore, TokensAfter     int
	MessagesBefore, MessagesAfter int
	Summary                       string // the summary text shown to the user; "" for pruning
	Note                          string // why a cheaper policy was not used (e.g. the model failed)
}

// Saved is the fraction of tokens the plan saves.
func (p *Plan) Saved() float64 {
	if p.TokensBefore == 0 {
		return 0
	}
	return float64(p.TokensBefore-p.TokensAfter) / float64(p.TokensBefore)
}

// prunedMarker replaces pruned tool output. It tells the model what
// happened so it re-runs the tool if it needs the output again.
func prunedMarker(tool string, tokens int) string {
	return fmt.Sprintf("[Output of %s (%d tokens) was pruned from the context to save space. Run the tool again if you need it.]", tool, tokens)
}

// Prune replaces old tool output with a short marker. The tool output of the
// last PruneProtectTurns user turns, the newest PruneProtectTokens tokens of
// tool output and the output of ProtectedTools are never touched; nothing is
// done unless at least PruneMinimum tokens are reclaimed. nil: nothing worth
// pruning.
func Prune(c Counter, fixed int, view []persistence.Message, s Settings) *Plan {
	_, rest := split(view)
	turns := Turns(rest)
	protectFrom := len(rest) // index in rest from which everything is protected
	users := 0
	for i := len(turns) - 1; i >= 0 && users < s.PruneProtectTurns; i-- {
		protectFrom = turns[i].Start
		if rest[turns[i].Start].Role == persistence.RoleUser {
			users++
		}
	}
	toolName := make(map[string]string)
	for _, m := range rest {
		for _, tc := range m.ToolCalls {
			toolName[tc.ID] = tc.Name
		}
	}
	type candidate struct {
		i      int
		marker string
		saved  int
	}
	var cands []candidate
	seen, reclaim := 0, 0
	for i := protectFrom - 1; i >= 0; i-- {
		m := &rest[i]
		if m.Role != persistence.RoleTool {
			continue
		}
		seen += m.TokenCount
		name := toolName[m.ToolCallID]
		if seen <= s.PruneProtectTokens || slices.Contains(s.ProtectedTools, name) || IsPruneMarker(m) {
			continue
		}
		if name == "" {
			name = "a tool"
		}
		marker := prunedMarker(name, m.TokenCount)
		saved := m.TokenCount - (messageOverhead + c.Count(marker) + c.Count(m.ToolCallID))
		if saved <= 0 {
			continue
		}
		cands = append(cands, candidate{i, marker, saved})
		reclaim += saved
	}
	if len(cands) == 0 || reclaim < max(s.PruneMinimum, 1) {
		return nil
	}
	before := fixed + ViewTokens(c, view)
	p := &Plan{Policy: PolicyPrune, TokensBefore: before, TokensAfter: before - reclaim,
		MessagesBefore: len(view), MessagesAfter: len(view)}
	pruned := make(map[int64]bool)
	for j := len(cands) - 1; j >= 0; j-- { // oldest first
		cd := cands[j]
		orig := &rest[cd.i]
		pruned[orig.ID] = true
		p.Compacted = append(p.Compacted, orig.ID)
		marker := &persistence.Message{Role: persistence.RoleTool, ToolCallID: orig.ToolCallID,
			Content: cd.marker, Status: orig.Status, Meta: metaJSON(PolicyPrune, nil, orig.ID)}
		marker.TokenCount = MessageTokens(c, marker)
		p.Added = append(p.Added, marker)
	}
	for _, m := range view {
		if !pruned[m.ID] {
			p.Kept = append(p.Kept, m.ID)
		}
	}
	return p
}

// IsPruneMarker reports whether m replaces pruned tool output.
func IsPruneMarker(m *persistence.Message) bool {
	if len(m.Meta) == 0 || m.Role != persistence.RoleTool { // markers are tool results (prune)
		return false
	}
	var meta summaryMeta
	return json.Unmarshal(m.Meta, &meta) == nil && meta.Crow.PrunedFrom != 0
}

func metaJSON(policy string, pinned *Pinned, prunedFrom int64) json.RawMessage {
	var meta summaryMeta
	meta.Crow.Policy, meta.Crow.Pinned, meta.Crow.PrunedFrom = policy, pinned, prunedFrom
	b, _ := json.Marshal(meta)
	return b
}

// cut is a split of the view at a turn boundary: the summaries and
// rest[:at] are compacted, rest[at:] is kept verbatim.
type cut struct {
	summaries, rest []persistence.Message
	at              int
}

func (k cut) compacted() []persistence.Message {
	out := append([]persistence.Message(nil), k.summaries...)
	return append(out, k.rest[:k.at]...)
}

func (k cut) kept() []persistence.Message { return k.rest[k.at:] }

// chooseCut picks the turn boundary for summarising: keep the newest
// request's turn (with its pending tool calls and results) and up to
// keepTurns turns before it, fewer while the result would exceed target.
// ok is false when nothing can be compacted.
func chooseCut(c Counter, view []persistence.Message, keepTurns, fixed, summaryTokens, target int) (cut, bool) {
	summaries, rest := split(view)
	turns := Turns(rest)
	k := cut{summaries: summaries, rest: rest}
	if len(turns) == 0 {
		return k, len(summaries) > 1
	}
	first := max(len(turns)-1-keepTurns, 0) // index of the first kept turn
	for first < len(turns)-1 && fixed+summaryTokens+ViewTokens(c, rest[turns[first].Start:]) > target {
		first++
	}
	k.at = turns[first].Start
	// Something must be compacted: older turns, or more than one summary
	// (merging them into one).
	return k, k.at > 0 || len(summaries) > 1
}

// manualCut keeps at least keep messages, moved back to a turn boundary.
func manualCut(view []persistence.Message, keep int) cut {
	summaries, rest := split(view)
	k := cut{summaries: summaries, rest: rest}
	at := max(len(rest)-keep, 0)
	for _, t := range Turns(rest) {
		if t.Start <= at {
			k.at = t.Start
		}
	}
	return k
}

// summaryTokens is the room a summary gets: a fifth of the input budget,
// between 200 and 4000 tokens.
func summaryTokens(s Settings) int {
	return min(max(s.Budget()/5, 200), 4000)
}

// summaryPlan builds the plan that replaces k's compacted part with one
// summary message.
func summaryPlan(c Counter, fixed int, view []persistence.Message, k cut, policy, text string, pinned *Pinned) *Plan {
	content := strings.TrimSpace(text) + "\n\n" + pinned.Render()
	sum := &persistence.Message{Role: persistence.RoleSummary, Content: content,
		Status: persistence.StatusComplete, Meta: metaJSON(policy, pinned, 0)}
	sum.TokenCount = MessageTokens(c, sum)
	p := &Plan{Policy: policy, Summary: content, Added: []*persistence.Message{sum},
		TokensBefore: fixed + ViewTokens(c, view), MessagesBefore: len(view)}
	kept := k.kept()
	keep := make(map[int64]bool, len(kept))
	for _, m := range kept {
		p.Kept = append(p.Kept, m.ID)
		keep[m.ID] = true
	}
	// Everything else goes, including results Order drops because their
	// call is not in the view (the model never sees them either way).
	for _, m := range view {
		if !keep[m.ID] {
			p.Compacted = append(p.Compacted, m.ID)
		}
	}
	after := append([]persistence.Message{*sum}, kept...)
	p.TokensAfter = fixed + ViewTokens(c, after)
	p.MessagesAfter = len(after)
	return p
}

// The summary request. Its sections are what a summary must keep.
const summarySystem = `You compact the history of a coding session between a user and a coding agent so the work can continue in a small context window. You write a faithful, dense summary of the conversation you are given. Never invent facts. Keep exact file paths, identifiers, commands, error messages and numbers.`

var summarySections = []string{"Task", "Decisions", "Constraints", "Files", "Errors", "Next steps"}

// SummaryRequest is the model request that summarises k's compacted part,
// made to fit the window with room for a reply of maxTokens.
func summaryRequest(c Counter, k cut, pinned *Pinned, focus string, s Settings, maxTokens int) provider.Request {
	var instr strings.Builder
	instr.WriteString("Write the summary in Markdown with exactly these sections, in this order: ")
	for i, sec := range summarySections {
		if i > 0 {
			instr.WriteString(", ")
		}
		instr.WriteString("## " + sec)
	}
	instr.WriteString(".\n- Task: what the user wants overall and what the latest request is.\n" +
		"- Decisions: what was decided or done, and why.\n" +
		"- Constraints: rules, preferences and requirements the user stated.\n" +
		"- Files: every file read, created or edited, with what changed.\n" +
		"- Errors: errors met and whether they were fixed.\n" +
		"- Next steps: what remains to do.\n")
	fmt.Fprintf(&instr, "Stay under %d tokens.", maxTokens*3/4)
	if focus != "" {
		fmt.Fprintf(&instr, "\nThe user asked the summary to focus on: %s", focus)
	}
	pin := "Facts recorded by the agent (keep them):\n" + pinned.Render()
	fixed := FixedTokens(c, summarySystem, nil) + c.Count(instr.String()) + c.Count(pin) + 2*messageOverhead + 50
	room := s.Window - maxTokens - fixed
	if s.Window <= 0 {
		room = 100000
	}
	transcript := renderTranscript(c, k.compacted(), max(room, 200))
	user := "Conversation to summarise, oldest first:\n\n" + transcript + "\n\n" + pin + "\n\n" + instr.String()
	return provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Content: summarySystem},
			{Role: provider.RoleUser, Content: user},
		},
		MaxTokens: maxTokens,
	}
}

// Per-entry caps of the transcript given to the summariser.
const (
	transcriptMessageTokens = 1500
	transcriptToolTokens    = 300
)

// renderTranscript writes msgs as plain text (so tool calls and results can
// never be separated in an API sense) within budget tokens, dropping the
// oldest lines first; earlier summaries are always kept.
func renderTranscript(c Counter, msgs []persistence.Message, budget int) string {
	// One entry takes at most half the room: the room is measured with a
	// calibration ratio learned on other text (the system prompt), and a
	// single entry filling all of it leaves no margin for that ratio's
	// error on prose.
	msgCap, toolCap := min(transcriptMessageTokens, budget/2), min(transcriptToolTokens, budget/2)
	var summaries, lines []string
	for _, m := range msgs {
		switch m.Role {
		case persistence.RoleSummary:
			summaries = append(summaries, "[earlier summary]\n"+truncate(c, m.Content, msgCap))
		case persistence.RoleUser:
			lines = append(lines, "[user]\n"+truncate(c, m.Content, msgCap))
		case persistence.RoleAssistant:
			var b strings.Builder
			if m.Content != "" {
				b.WriteString("[assistant]\n" + truncate(c, m.Content, msgCap))
			}
			for _, tc := range m.ToolCalls {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "[assistant called %s %s]", tc.Name, truncate(c, tc.Arguments, toolCap))
			}
			if b.Len() > 0 {
				lines = append(lines, b.String())
			}
		case persistence.RoleTool:
			status := ""
			if m.Status == persistence.StatusFailed {
				status = " (failed)"
			}
			lines = append(lines, fmt.Sprintf("[tool result%s]\n%s", status, truncate(c, m.Content, toolCap)))
		}
	}
	used := 0
	for _, s := range summaries {
		used += c.Count(s) + 1
	}
	first := len(lines)
	for first > 0 {
		n := c.Count(lines[first-1]) + 1
		if used+n > budget {
			break
		}
		used += n
		first--
	}
	out := summaries
	if first > 0 {
		out = append(out, fmt.Sprintf("[%d older entries omitted to fit the summary request]", first))
	}
	out = append(out, lines[first:]...)
	return strings.Join(out, "\n\n")
}

// fallbackSummary is the deterministic summary used when the model cannot
// write one: the requests, the answers' openings, the tools used and the
// errors, newest kept when space runs out.
func fallbackSummary(c Counter, k cut, budget int, reason string) string {
	var lines []string
	var errs []string
	for _, m := range k.compacted() {
		switch m.Role {
		case persistence.RoleSummary:
			lines = append(lines, "- Earlier summary: "+oneLine(truncate(c, stripPinned(m.Content), 300)))
		case persistence.RoleUser:
			lines = append(lines, "- User: "+oneLine(truncate(c, m.Content, 120)))
		case persistence.RoleAssistant:
			if m.Content != "" {
				lines = append(lines, "  Assistant: "+oneLine(truncate(c, m.Content, 80)))
			}
			for _, tc := range m.ToolCalls {
				lines = append(lines, fmt.Sprintf("  Tool: %s %s", tc.Name, oneLine(truncate(c, tc.Arguments, 40))))
			}
		case persistence.RoleTool:
			if m.Status == persistence.StatusFailed || strings.HasPrefix(m.Content, "Error") {
				errs = append(errs, "- "+oneLine(truncate(c, m.Content, 60)))
			}
		}
	}
	head := "Summary written by crow-acp without the model"
	if reason != "" {
		head += " (" + oneLine(reason) + ")"
	}
	head += ".\n## Conversation so far"
	used := c.Count(head)
	var errText string
	if len(errs) > 0 {
		errText = "## Errors\n" + strings.Join(lastN(errs, 10), "\n")
		used += c.Count(errText)
	}
	first := len(lines)
	for first > 0 {
		n := c.Count(lines[first-1]) + 1
		if used+n > budget {
			break
		}
		used += n
		first--
	}
	out := []string{head}
	if first > 0 {
		out = append(out, fmt.Sprintf("- (%d older entries omitted)", first))
	}
	out = append(out, lines[first:]...)
	if errText != "" {
		out = append(out, errText)
	}
	return strings.Join(out, "\n")
}

// dropText is the summary of a drop: no summary, only the pinned state.
const dropText = "Older turns were dropped to fit the context window. They are kept in the session history and can be restored with _crow/compaction/expand."

// stripPinned removes the pinned section of an earlier summary (it is
// merged into the new pinned state as data).
func stripPinned(s string) string {
	if i := strings.Index(s, "## Pinned state"); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
