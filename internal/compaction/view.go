package compaction

import (
	"encoding/json"
	"slices"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// SummaryPrefix introduces a summary message in the model's context: the
// summary is context, never something the user said.
const SummaryPrefix = "Summary of the earlier conversation (older messages were compacted):\n\n"

// InterruptedResult answers a tool call whose result never reached the
// store. Model APIs reject a context with a call and no result.
const InterruptedResult = "Error: this tool call was interrupted before it produced a result."

// Per-message costs of the chat format (role markers, separators), as the
// OpenAI cookbook counts them, rounded up.
const (
	messageOverhead  = 4
	toolCallOverhead = 8
	requestOverhead  = 3 // the primer of the reply
)

// Order returns the active messages in the order the model reads them:
// summaries first (the torso's context), then the other messages in seq
// order, each tool result right after the assistant message that made the
// call. A result belongs to the nearest assistant message before it that
// has a call with its id (some servers number calls call_0, call_1... afresh
// in every reply, so ids repeat across a session; a pruned result, stored
// later, still finds its call). Results that answer no call are dropped (an
// API rejects them), and of two results for one call the later wins. Calls
// without an id, or repeating one within a message, are dropped too: no
// result could be matched to them. msgs must be in seq order; the result
// shares no slice with it.
func Order(msgs []persistence.Message) []persistence.Message {
	out := make([]persistence.Message, 0, len(msgs))
	owner := make(map[string]int)           // call id -> index of the latest assistant message making it
	results := make(map[int]map[string]int) // assistant index -> call id -> index of its latest result
	for i, m := range msgs {
		switch m.Role {
		case persistence.RoleSummary:
			out = append(out, m)
		case persistence.RoleAssistant:
			for _, c := range m.ToolCalls {
				owner[c.ID] = i
			}
		case persistence.RoleTool:
			if a, ok := owner[m.ToolCallID]; ok {
				if results[a] == nil {
					results[a] = make(map[string]int)
				}
				results[a][m.ToolCallID] = i
			}
		}
	}
	for i, m := range msgs {
		switch m.Role {
		case persistence.RoleSummary, persistence.RoleTool:
			continue
		case persistence.RoleAssistant:
			m.ToolCalls = answerableCalls(m.ToolCalls)
			out = append(out, m)
			for _, c := range m.ToolCalls {
				if j, ok := results[i][c.ID]; ok {
					out = append(out, msgs[j])
				}
			}
		default:
			out = append(out, m)
		}
	}
	return out
}

// answerableCalls drops calls without an id and repeats of an id.
func answerableCalls(calls []persistence.ToolCall) []persistence.ToolCall {
	seen := make(map[string]bool, len(calls))
	for i, c := range calls {
		if c.ID != "" && !seen[c.ID] {
			seen[c.ID] = true
			continue
		}
		// Rare: copy so the caller's message is left alone.
		kept := append([]persistence.ToolCall(nil), calls[:i]...)
		for _, c := range calls[i+1:] {
			if c.ID != "" && !seen[c.ID] {
				seen[c.ID] = true
				kept = append(kept, c)
			}
		}
		return kept
	}
	return calls
}

// MessageTokens counts what the model reads for one stored message.
func MessageTokens(c Counter, m *persistence.Message) int {
	n := messageOverhead + c.Count(m.Content)
	switch m.Role {
	case persistence.RoleSummary:
		n += c.Count(SummaryPrefix)
	case persistence.RoleTool:
		n += c.Count(m.ToolCallID)
	}
	// Images by their size (ImageTokens); one taken out of the context
	// (DropImages) by the note standing in for it.
	dropped := DroppedParts(m)
	for i, p := range m.Parts {
		switch {
		case p.Type != "image":
		case slices.Contains(dropped, i):
			n += c.Count(ImageNote(p))
		default:
			n += partTokens(p)
		}
	}
	for _, tc := range m.ToolCalls {
		n += toolCallOverhead + c.Count(tc.ID) + c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	return n
}

// SyntheticTokens is the cost of the result added for an unanswered call.
func SyntheticTokens(c Counter, callID string) int {
	return messageOverhead + c.Count(InterruptedResult) + c.Count(callID)
}

// FixedTokens counts the head of every request: the system prompt and the
// tool schemas.
func FixedTokens(c Counter, system string, tools []provider.Tool) int {
	n := requestOverhead + messageOverhead + c.Count(system)
	for _, t := range tools {
		b, _ := json.Marshal(map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Parameters})
		n += toolCallOverhead + c.Count(string(b))
	}
	return n
}

// ViewTokens is the total of a view (in any order): each message's cached
// TokenCount, plus a synthetic result for every unanswered call.
func ViewTokens(c Counter, msgs []persistence.Message) int {
	n := 0
	answered := make(map[string]bool)
	for i := range msgs {
		if msgs[i].Role == persistence.RoleTool {
			answered[msgs[i].ToolCallID] = true
		}
	}
	for i := range msgs {
		n += msgs[i].TokenCount
		for _, tc := range msgs[i].ToolCalls {
			if !answered[tc.ID] {
				n += SyntheticTokens(c, tc.ID)
			}
		}
	}
	return n
}

// Turn is a half-open range [Start, End) of a seq-ordered, summary-free
// message slice that begins with a user message (the first turn may begin
// with whatever preceded the first user message).
type Turn struct{ Start, End int }

// Turns splits msgs (seq order, without summaries) at every user message.
// Cutting between turns never separates a tool call from its result: both
// belong to the turn of the request that caused them.
func Turns(msgs []persistence.Message) []Turn {
	var out []Turn
	start := 0
	for i, m := range msgs {
		if m.Role == persistence.RoleUser && i > start {
			out = append(out, Turn{start, i})
			start = i
		}
	}
	if start < len(msgs) {
		out = append(out, Turn{start, len(msgs)})
	}
	return out
}

// split separates summaries from the conversation, both in the order the
// model reads them (Order): seq order, with each tool result right after
// its call. Turn boundaries are computed on that order.
func split(msgs []persistence.Message) (summaries, rest []persistence.Message) {
	for _, m := range Order(msgs) {
		if m.Role == persistence.RoleSummary {
			summaries = append(summaries, m)
		} else {
			rest = append(rest, m)
		}
	}
	return summaries, rest
}

// newestUser returns the index in msgs of the newest user message, or -1.
func newestUser(msgs []persistence.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == persistence.RoleUser {
			return i
		}
	}
	return -1
}
