package agent

import (
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Reasoning items (OpenAI's Responses API) must go back with the function
// calls they led to for the rest of the turn; they are opaque, encrypted,
// and worthless after it, so they are kept in memory for the running turn
// only, by the stored assistant message they belong to. Compaction and
// replay see the stored messages exactly as for chat completions.

// keepReasoningItems remembers the items of a reply for its turn.
func (sess *session) keepReasoningItems(messageID int64, items []provider.ReasoningItem) {
	if len(items) == 0 || messageID == 0 {
		return
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.items == nil {
		sess.items = make(map[int64][]provider.ReasoningItem)
	}
	sess.items[messageID] = items
}

// withReasoningItems attaches the turn's reasoning items to the messages of
// a request.
func (sess *session) withReasoningItems(entries []request.ContextEntry) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if len(sess.items) == 0 {
		return
	}
	byMsg := sess.items
	for i := range entries {
		if items, ok := byMsg[entries[i].MessageID]; ok && entries[i].Msg.Role == provider.RoleAssistant {
			entries[i].Msg.ReasoningItems = items
		}
	}
}
