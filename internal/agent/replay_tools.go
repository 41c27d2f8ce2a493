package agent

import (
	"encoding/json"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// callIndex knows, along a stored conversation replayed in order, the
// arguments of the call each tool result answers and which calls never got
// a result. Both are positional: providers that number calls per turn
// (call_0, call_1...) reuse ids across turns, so a result answers the
// latest call before it with its id, and a call is answered only by a
// result after it and before the next call with the same id.
type callIndex struct {
	calls      map[string]persistence.ToolCall // the latest call replayed, by id
	unanswered map[callAt]bool
	next       int  // the position of the message appendReplay is given next
	subagents  bool // the client shows subagents: a task call announces its child
}

// callAt is one call of the message at a position of the conversation.
type callAt struct {
	pos int
	id  string
}

func newCallIndex(msgs []persistence.Message) *callIndex {
	ix := &callIndex{calls: make(map[string]persistence.ToolCall), unanswered: make(map[callAt]bool)}
	// Backwards: a result is claimed by the nearest call before it.
	results := make(map[string]bool) // ids with a result after this point, not yet claimed
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role == persistence.RoleTool {
			results[m.ToolCallID] = true
			continue
		}
		for _, c := range m.ToolCalls {
			if results[c.ID] {
				results[c.ID] = false
			} else {
				ix.unanswered[callAt{i, c.ID}] = true
			}
		}
	}
	return ix
}

// appendReplay appends the tool-call updates one stored message shows: a tool
// result replays its call as it ended (tool_call, then the final
// tool_call_update with title, kind and content); an update_plan result
// replays the plan; a call that never got a result shows as failed.
// Messages are given in order, each once.
func (ix *callIndex) appendReplay(out []acp.SessionUpdate, m persistence.Message) []acp.SessionUpdate {
	pos := ix.next
	ix.next++
	switch m.Role {
	case persistence.RoleAssistant:
		for _, c := range m.ToolCalls {
			ix.calls[c.ID] = c
			if !ix.unanswered[callAt{pos, c.ID}] || c.Name == planTool {
				continue
			}
			out = append(out, acp.SessionUpdate{ToolCall: &acp.ToolCall{
				ToolCallID: c.ID, Title: c.Name, Kind: acp.ToolKindOther, Status: acp.ToolStatusFailed,
				RawInput: rawInput(c.Arguments), Content: []acp.ToolCallContent{acp.ToolText(compaction.InterruptedResult)},
			}})
		}
		return out
	case persistence.RoleTool:
		meta := decodeToolMeta(m.Meta)
		c := ix.calls[m.ToolCallID]
		if meta.Name == "" {
			meta.Name = c.Name
		}
		if meta.Name == planTool {
			if meta.Plan != nil {
				return append(out, acp.SessionUpdate{Plan: meta.Plan})
			}
			return out
		}
		if meta.Title == "" {
			meta.Title = meta.Name
		}
		if meta.Kind == "" {
			meta.Kind = acp.ToolKindOther
		}
		if meta.Status == "" {
			meta.Status = acp.ToolStatusCompleted
			if m.Status != persistence.StatusComplete {
				meta.Status = acp.ToolStatusFailed
			}
		}
		if meta.Content == nil {
			meta.Content = []acp.ToolCallContent{acp.ToolText(m.Content)}
		}
		out = append(out, acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: m.ToolCallID, Title: meta.Title, Kind: meta.Kind,
			Status: acp.ToolStatusPending, Locations: meta.Locations, RawInput: rawInput(c.Arguments)}})
		if meta.Child != nil && ix.subagents {
			out = append(out, subagentReplay(meta.Child, m.ToolCallID))
		}
		return append(out,
			acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: m.ToolCallID, Title: meta.Title, Kind: meta.Kind,
				Status: meta.Status, Content: meta.Content}})
	}
	return out
}

// decodeToolMeta reads a tool result's meta; a result stored before tools
// had any has none. (The variable given to Unmarshal is made only when
// there is something to decode: a replay reads thousands of results.)
func decodeToolMeta(raw json.RawMessage) toolMeta {
	if len(raw) == 0 {
		return toolMeta{}
	}
	var meta toolMeta
	_ = json.Unmarshal(raw, &meta)
	return meta
}

func rawInput(args string) json.RawMessage {
	if args != "" && json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return nil
}
