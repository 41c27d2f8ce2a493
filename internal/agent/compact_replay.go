package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// compactedMeta marks a replayed chunk whose message was compacted: the
// user sees the original conversation, the model a summary of it.
type compactedMeta struct {
	Crow struct {
		Compacted    bool  `json:"compacted,omitempty"`
		CompactionID int64 `json:"compactionId,omitempty"`
		Summary      bool  `json:"compactionSummary,omitempty"`
	} `json:"crow"`
}

func (m compactedMeta) raw() json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}

// compactionReplay returns the function that adapts one message's replay
// updates: compacted messages are marked in _meta, and a summary appears
// where the compaction happened, as compaction_update for clients that
// support it and as a short agent message otherwise.
func (l *lifecycle) compactionReplay(ctx context.Context, sessionID string, msgs []persistence.Message) (func(persistence.Message, []acp.SessionUpdate) []acp.SessionUpdate, error) {
	needed := false
	for i := range msgs {
		if !msgs[i].IsActive || msgs[i].Role == persistence.RoleSummary {
			needed = true
			break
		}
	}
	bySummary := map[int64]persistence.Compaction{}
	if needed {
		list, err := l.store.Compactions(ctx, sessionID)
		if err != nil {
			return nil, storeError("load session", err)
		}
		for _, c := range list {
			for _, id := range c.AddedIDs {
				bySummary[id] = c
			}
		}
	}
	caps := l.capabilities()
	compactedRaw := map[int64]json.RawMessage{}
	return func(m persistence.Message, ups []acp.SessionUpdate) []acp.SessionUpdate {
		if compaction.IsPruneMarker(&m) {
			return nil // the original tool output is replayed instead
		}
		if m.Role == persistence.RoleSummary {
			c, ok := bySummary[m.ID]
			var meta compactedMeta
			meta.Crow.Summary, meta.Crow.CompactionID = true, c.ID
			if caps.SupportsCompaction() {
				return []acp.SessionUpdate{acp.CompactionUpdate{CompactionID: compactionRef(c, ok, m.ID),
					Status: acp.CompactionCompleted, Summary: []acp.ContentBlock{acp.TextBlock(m.Content)},
					Meta: meta.raw()}.Update()}
			}
			text := fmt.Sprintf("[Earlier messages were compacted (%s). Summary given to the model:]\n\n%s\n\n", policyOf(m), m.Content)
			return []acp.SessionUpdate{{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(text), MessageID: messageID(&m), Meta: meta.raw()}}}
		}
		if m.IsActive || m.CompactedIntoID == nil {
			return ups
		}
		raw, ok := compactedRaw[*m.CompactedIntoID]
		if !ok {
			var meta compactedMeta
			meta.Crow.Compacted, meta.Crow.CompactionID = true, *m.CompactedIntoID
			raw = meta.raw()
			compactedRaw[*m.CompactedIntoID] = raw // one per compaction, not per message
		}
		for i := range ups {
			for _, ch := range []*acp.ContentChunk{ups[i].UserMessageChunk, ups[i].AgentMessageChunk, ups[i].AgentThoughtChunk} {
				if ch != nil && len(ch.Meta) == 0 {
					ch.Meta = raw
				}
			}
		}
		return ups
	}, nil
}

// compactionRef is the compactionId a compaction was announced with.
func compactionRef(c persistence.Compaction, ok bool, summaryID int64) string {
	if ok {
		var s struct {
			Ref string `json:"ref"`
		}
		if json.Unmarshal(c.Settings, &s) == nil && s.Ref != "" {
			return s.Ref
		}
		return fmt.Sprintf("cmp_%d", c.ID)
	}
	return fmt.Sprintf("cmp_summary_%d", summaryID)
}

func policyOf(m persistence.Message) string {
	var meta struct {
		Crow struct {
			Policy string `json:"policy"`
		} `json:"crow"`
	}
	if json.Unmarshal(m.Meta, &meta) == nil && meta.Crow.Policy != "" {
		return meta.Crow.Policy
	}
	return "summary"
}
