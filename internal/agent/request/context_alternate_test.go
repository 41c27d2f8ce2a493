package request

import (
	"testing"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// TestContextRolesAlternate: consecutive user messages (a summary and the
// prompt after it, a prompt whose turn got no reply, a reply that was
// reasoning only) go out as one user message holding each text verbatim,
// with the tokens of all and the first message's id; consecutive
// assistant messages likewise, keeping the last one's tool calls.
func TestContextRolesAlternate(t *testing.T) {
	img := []persistence.Part{{Type: "image", MimeType: "image/png", Data: "AAAA"}}
	view := []persistence.Message{
		{ID: 1, Role: persistence.RoleSummary, Content: "the summary", TokenCount: 10},
		{ID: 2, Role: persistence.RoleUser, Content: "first prompt", TokenCount: 3},
		{ID: 3, Role: persistence.RoleAssistant, Reasoning: "only thinking", TokenCount: 4},
		{ID: 4, Role: persistence.RoleUser, Content: "second prompt", Parts: img, TokenCount: 5},
		{ID: 5, Role: persistence.RoleAssistant, Content: "partial", TokenCount: 2},
		{ID: 6, Role: persistence.RoleAssistant, Content: "", TokenCount: 6, ToolCalls: []persistence.ToolCall{{ID: "c1", Name: "read_file", Arguments: "{}"}}},
		{ID: 7, Role: persistence.RoleTool, ToolCallID: "c1", Content: "result", TokenCount: 1},
		{ID: 8, Role: persistence.RoleAssistant, Content: "done", TokenCount: 1},
		{ID: 9, Role: persistence.RoleUser, Content: "third prompt", TokenCount: 2},
	}
	got := ContextMessages(compaction.Estimator{}, "sys", view)
	want := []struct {
		role    provider.Role
		content string
		tokens  int
		id      int64
		calls   int
	}{
		{provider.RoleSystem, "sys", 0, 0, 0},
		{provider.RoleUser, compaction.SummaryPrefix + "the summary\n\nfirst prompt\n\nsecond prompt", 18, 1, 0},
		{provider.RoleAssistant, "partial", 8, 6, 1},
		{provider.RoleTool, "result", 1, 7, 0},
		{provider.RoleAssistant, "done", 1, 8, 0},
		{provider.RoleUser, "third prompt", 2, 9, 0},
	}
	if len(got) != len(want) {
		for _, e := range got {
			t.Logf("%s %q", e.Msg.Role, e.Msg.Content)
		}
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i, w := range want {
		e := got[i]
		if e.Msg.Role != w.role || e.Msg.Content != w.content || e.Tokens != w.tokens || e.MessageID != w.id || len(e.Msg.ToolCalls) != w.calls {
			t.Errorf("message %d: %s %q tokens %d id %d calls %d; want %s %q %d %d %d", i, e.Msg.Role, e.Msg.Content, e.Tokens, e.MessageID, len(e.Msg.ToolCalls), w.role, w.content, w.tokens, w.id, w.calls)
		}
	}
	if len(got[1].Msg.Parts) != 1 {
		t.Errorf("the image of the merged prompt was lost: %+v", got[1].Msg.Parts)
	}
	if view[3].Parts[0].Data != "AAAA" || len(view) != 9 {
		t.Error("the stored view was changed")
	}
}

// TestContextCacheKeepsAlternation: the context cache builds a request from
// a memoised prefix and the rest; a prompt with no reply at the boundary
// still merges with the next.
func TestContextCacheKeepsAlternation(t *testing.T) {
	var cc ContextCache
	c := compaction.Estimator{}
	view := []persistence.Message{
		{ID: 1, Role: persistence.RoleUser, Content: "one"},
		{ID: 2, Role: persistence.RoleAssistant, Content: "One."},
		{ID: 3, Role: persistence.RoleUser, Content: "two"},
	}
	cc.RequestEntries(c, "sys", view)
	view = append(view, persistence.Message{ID: 4, Role: persistence.RoleUser, Content: "three"})
	got := cc.RequestEntries(c, "sys", view)
	view = append(view, persistence.Message{ID: 5, Role: persistence.RoleAssistant, Content: "Three."}, persistence.Message{ID: 6, Role: persistence.RoleUser, Content: "four"})
	got2 := cc.RequestEntries(c, "sys", view)
	for _, entries := range [][]ContextEntry{got, got2} {
		for i := 1; i < len(entries); i++ {
			if entries[i].Msg.Role == entries[i-1].Msg.Role {
				t.Fatalf("two %s messages in a row: %q, %q", entries[i].Msg.Role, entries[i-1].Msg.Content, entries[i].Msg.Content)
			}
		}
	}
	if n := len(got2); n != 6 || got2[3].Msg.Content != "two\n\nthree" || got2[5].Msg.Content != "four" {
		t.Errorf("request: %d messages, %q", n, got2[len(got2)-1].Msg.Content)
	}
}
