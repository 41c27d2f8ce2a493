package request

import (
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// entriesMemo keeps the request messages built from the closed part of the
// last request's view: everything before its last user message, which the
// next turn only adds after. So a request builds the messages of what
// follows only, not of the whole history again.
//
// A tool result belongs to the nearest earlier assistant message that made
// its call (compaction.Order), and a summary goes first: a later message
// could change the closed part only as a result for a call made in it, or
// as a summary. Both are checked; either builds everything again.
type entriesMemo struct {
	prefix  []persistence.Message // the closed part, a prefix of the view (shared, never changed)
	counter string                // the counter of the synthetic results in entries
	entries []ContextEntry        // contextMessages of prefix, without the system prompt; never handed out
	calls   map[string]bool       // the call ids made in prefix
}

// requestEntries is contextMessages(c, system, view). view must be the kept
// view of the session (its messages are never changed once handed out).
func (cc *ContextCache) RequestEntries(c compaction.Counter, system string, view []persistence.Message) []ContextEntry {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	memo := &cc.entries
	cut := len(memo.prefix)
	if cut > 0 && (memo.counter != c.Name() || len(view) < cut || &view[0] != &memo.prefix[0] || !closedAfter(view[cut:], memo.calls)) {
		*memo, cut = entriesMemo{}, 0
	}
	rest := ContextMessages(c, system, view[cut:])
	out := make([]ContextEntry, 0, len(memo.entries)+len(rest))
	out = append(out, rest[0]) // the system prompt
	out = append(out, memo.entries...)
	out = append(out, rest[1:]...)
	out = alternate(out)
	memo.advance(c, view, out)
	return out
}

// closedAfter reports whether msgs, following a closed part that made the
// calls in calls, leave that part as it is.
func closedAfter(msgs []persistence.Message, calls map[string]bool) bool {
	var made map[string]bool
	for i := range msgs {
		switch m := &msgs[i]; m.Role {
		case persistence.RoleSummary:
			return false
		case persistence.RoleAssistant:
			for _, tc := range m.ToolCalls {
				if made == nil {
					made = make(map[string]bool)
				}
				made[tc.ID] = true
			}
		case persistence.RoleTool:
			if !made[m.ToolCallID] && calls[m.ToolCallID] {
				return false
			}
		}
	}
	return true
}

// advance moves the closed part up to the last user message of view, whose
// request messages are out, when what follows it leaves it closed.
func (memo *entriesMemo) advance(c compaction.Counter, view []persistence.Message, out []ContextEntry) {
	last := -1
	for i := len(view) - 1; i >= len(memo.prefix); i-- {
		if view[i].Role == persistence.RoleUser {
			last = i
			break
		}
	}
	if last <= len(memo.prefix) {
		return
	}
	calls := make(map[string]bool, len(memo.calls))
	for id := range memo.calls {
		calls[id] = true
	}
	for i := len(memo.prefix); i < last; i++ {
		for _, tc := range view[i].ToolCalls {
			calls[tc.ID] = true
		}
	}
	if !closedAfter(view[last:], calls) {
		return
	}
	// The user message's entry ends the closed part's messages.
	end := -1
	for i := len(out) - 1; i > len(memo.entries); i-- {
		if out[i].MessageID == view[last].ID {
			end = i
			break
		}
	}
	if end < 0 {
		return
	}
	memo.entries = append(memo.entries, out[1+len(memo.entries):end]...)
	memo.prefix, memo.counter, memo.calls = view[:last:last], c.Name(), calls
}
