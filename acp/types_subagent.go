package acp

import "encoding/json"

// SubagentUpdate is the SDK 2.4 (unstable) `subagent_update` session update,
// sent on a parent session: it announces a child session the parent created
// and owns, and later changes the child's display metadata or state.
// Omitted fields keep their earlier values. Send it only to a client that
// advertised `subagents` (SupportsSubagents), before any update of the
// child itself.
type SubagentUpdate struct {
	SessionID    string                       `json:"sessionId"`
	Title        string                       `json:"title,omitempty"`
	Description  string                       `json:"description,omitempty"`
	Capabilities *SubagentSessionCapabilities `json:"capabilities,omitempty"`
	State        *SubagentState               `json:"state,omitempty"`
	Cwd          string                       `json:"cwd,omitempty"`
	Meta         Meta                         `json:"_meta,omitempty"`
}

// SubagentSessionCapabilities are the client-initiated mutations a child
// session allows; Cancel: session/cancel on the child's id stops its work.
type SubagentSessionCapabilities struct {
	Cancel *Marker `json:"cancel,omitempty"`
}

// Subagent states (StateUpdate in the schema).
const (
	SubagentRunning        = "running"
	SubagentIdle           = "idle"
	SubagentRequiresAction = "requires_action"
)

// SubagentState is a whole snapshot of a child's foreground work: running,
// idle (with the stop reason of the work that ended) or requires_action.
type SubagentState struct {
	State      string     `json:"state"`
	StopReason StopReason `json:"stopReason,omitempty"` // idle only
	Usage      *Usage     `json:"usage,omitempty"`      // idle only
}

// Update wraps the subagent update as a session update.
func (u SubagentUpdate) Update() SessionUpdate {
	return otherUpdate("subagent_update", u)
}

// SupportsSubagents reports whether the client advertised `subagents`: it
// shows child sessions, their updates and their permission requests.
func (c ClientCapabilities) SupportsSubagents() bool {
	return advertised(c.Subagents)
}

func advertised(m *json.RawMessage) bool {
	return m != nil && string(*m) != "null"
}
