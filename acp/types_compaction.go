package acp

import "encoding/json"

// Compaction statuses of CompactionUpdate.
const (
	CompactionInProgress = "in_progress"
	CompactionCompleted  = "completed"
	CompactionFailed     = "failed"
	CompactionCancelled  = "cancelled"
)

// CompactionUpdate is the `compaction_update` session update of the ACP SDK
// 2.4 schema (not in the stable schema). Agents send it only to clients
// that advertised the `session.compaction` capability.
type CompactionUpdate struct {
	CompactionID string         `json:"compactionId"`
	Status       string         `json:"status"`
	Summary      []ContentBlock `json:"summary,omitempty"`
	Error        *string        `json:"error,omitempty"`
	Meta         Meta           `json:"_meta,omitempty"`
}

// Update wraps u as a SessionUpdate (carried in SessionUpdate.Other).
func (u CompactionUpdate) Update() SessionUpdate {
	return otherUpdate("compaction_update", u)
}

// ParseCompactionUpdate reads a compaction_update carried in
// SessionUpdate.Other; ok is false for any other update kind.
func ParseCompactionUpdate(raw json.RawMessage) (u CompactionUpdate, ok bool) {
	var tagged struct {
		SessionUpdate string `json:"sessionUpdate"`
		CompactionUpdate
	}
	if json.Unmarshal(raw, &tagged) != nil || tagged.SessionUpdate != "compaction_update" {
		return CompactionUpdate{}, false
	}
	return tagged.CompactionUpdate, true
}

// SupportsCompaction reports whether the client advertised
// `session.compaction`.
func (c ClientCapabilities) SupportsCompaction() bool {
	return c.Session != nil && c.Session.Compaction != nil
}
