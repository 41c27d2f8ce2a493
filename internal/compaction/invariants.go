package compaction

import (
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// CheckPlan verifies the invariants of a plan against the view it was made
// from. The pipeline runs it before applying any plan; the property tests
// run it on every legal cut.
//
//   - Compacted and Kept partition the view.
//   - Summaries cut only at turn boundaries: the compacted conversation is
//     a prefix of whole turns.
//   - The newest user message is kept (the same stored row: byte-identical).
//   - No tool call is separated from its result: a result is compacted only
//     with its call, or replaced by a marker for the same call.
//   - A summary carries the pinned state as data.
func CheckPlan(c Counter, view []persistence.Message, p *Plan) error {
	byID := make(map[int64]*persistence.Message, len(view))
	for i := range view {
		byID[view[i].ID] = &view[i]
	}
	compacted := make(map[int64]bool, len(p.Compacted))
	for _, id := range p.Compacted {
		if byID[id] == nil {
			return fmt.Errorf("compacted message %d is not in the view", id)
		}
		if compacted[id] {
			return fmt.Errorf("message %d compacted twice", id)
		}
		compacted[id] = true
	}
	kept := make(map[int64]bool, len(p.Kept))
	for _, id := range p.Kept {
		if byID[id] == nil || compacted[id] || kept[id] {
			return fmt.Errorf("kept message %d is not in the view, compacted, or kept twice", id)
		}
		kept[id] = true
	}
	if len(compacted)+len(kept) != len(view) {
		return fmt.Errorf("compacted (%d) and kept (%d) do not cover the view (%d)", len(compacted), len(kept), len(view))
	}
	if len(compacted) == 0 {
		return errors.New("the plan compacts nothing")
	}
	_, rest := split(view)
	if i := newestUser(rest); i >= 0 && !kept[rest[i].ID] {
		return fmt.Errorf("the newest user message %d is not kept verbatim", rest[i].ID)
	}

	replaced := make(map[string]bool) // call ids answered by an added marker
	for _, m := range p.Added {
		if m.ID != 0 {
			return fmt.Errorf("added message already has id %d", m.ID)
		}
		if m.Role == persistence.RoleTool {
			replaced[m.ToolCallID] = true
		}
	}
	switch p.Policy {
	case PolicyPrune:
		for id := range compacted {
			m := byID[id]
			if m.Role != persistence.RoleTool || !replaced[m.ToolCallID] {
				return fmt.Errorf("pruning compacted message %d without a marker for its call", id)
			}
		}
	default:
		if len(p.Added) != 1 || p.Added[0].Role != persistence.RoleSummary {
			return fmt.Errorf("%s plan must add exactly one summary message", p.Policy)
		}
		if pin := PinnedOf(p.Added[0]); pin == nil {
			return errors.New("the summary carries no pinned state")
		} else if i := newestUser(rest); i >= 0 && pin.LatestRequest == "" {
			return errors.New("the pinned state lacks the latest request")
		}
		// The compacted conversation is rest[:at] for a turn start at.
		at := 0
		for at < len(rest) && compacted[rest[at].ID] {
			at++
		}
		for _, m := range rest[at:] {
			if compacted[m.ID] {
				return fmt.Errorf("compacted message %d is not in a prefix of the conversation", m.ID)
			}
		}
		if at < len(rest) && at > 0 && rest[at].Role != persistence.RoleUser {
			return fmt.Errorf("cut at message %d is inside a turn (not a user message)", rest[at].ID)
		}
	}

	// Calls and results stay together.
	callOwner := make(map[string]int64)
	for _, m := range view {
		for _, tc := range m.ToolCalls {
			callOwner[tc.ID] = m.ID
		}
	}
	for _, m := range view {
		if m.Role != persistence.RoleTool {
			continue
		}
		owner, ok := callOwner[m.ToolCallID]
		if !ok {
			continue // an orphan result; Order drops it either way
		}
		if kept[m.ID] && compacted[owner] {
			return fmt.Errorf("tool result %d kept while its call (message %d) is compacted", m.ID, owner)
		}
		if compacted[m.ID] && kept[owner] && !replaced[m.ToolCallID] {
			return fmt.Errorf("tool result %d compacted while its call (message %d) is kept", m.ID, owner)
		}
	}
	if p.TokensAfter != 0 && p.TokensAfter > p.TokensBefore && p.Policy != PolicySummarize && p.Policy != PolicyFallback {
		return fmt.Errorf("%s plan grows the context (%d -> %d tokens)", p.Policy, p.TokensBefore, p.TokensAfter)
	}
	return nil
}

// CheckSequence verifies that an ordered context is what chat APIs accept:
// every tool message directly follows the assistant message that called it
// (after that message's other results), and every call is answered before
// the next non-tool message. unanswered lists calls that will get a
// synthetic result (they count as answered).
func CheckSequence(msgs []persistence.Message) error {
	pending := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case persistence.RoleTool:
			if !pending[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result for %q does not follow its call", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		default:
			// Unanswered calls of the previous assistant get synthetic
			// results right after it; nothing can sit between.
			clear(pending)
			for _, tc := range m.ToolCalls {
				pending[tc.ID] = true
			}
		}
	}
	return nil
}
