package request

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// TestToolImagesFollowTheResults: the images tool results gave go out as
// one user message after the last result of their call (a tool message
// carries text only), so every result still follows its call; an image
// compaction took out is its note, as text.
func TestToolImagesFollowTheResults(t *testing.T) {
	png := persistence.Part{Type: "image", MimeType: "image/png", Data: "iVBORw0KGgo="}
	dropped, _ := json.Marshal(map[string]any{"crow": map[string]any{"droppedImages": []int{1}}})
	view := []persistence.Message{
		{ID: 1, Role: persistence.RoleUser, Content: "old screenshot", Parts: []persistence.Part{{Type: "text", Text: "old screenshot"}, png}, Meta: dropped},
		{ID: 2, Role: persistence.RoleAssistant, ToolCalls: []persistence.ToolCall{{ID: "c1", Name: "read_file"}, {ID: "c2", Name: "read_file"}}},
		{ID: 3, Role: persistence.RoleTool, ToolCallID: "c1", Content: "a.png is a PNG image", Parts: []persistence.Part{png}},
		{ID: 4, Role: persistence.RoleTool, ToolCallID: "c2", Content: "b.txt"},
		{ID: 5, Role: persistence.RoleAssistant, Content: "done"},
	}
	got := ContextMessages(compaction.Estimator{}, "sys", view)
	var roles []string
	for _, e := range got {
		roles = append(roles, string(e.Msg.Role))
	}
	if strings.Join(roles, " ") != "system user assistant tool tool user assistant" {
		t.Fatalf("roles %v", roles)
	}
	if p := got[1].Msg.Parts; len(p) != 1 || p[0].Type != "text" || !strings.Contains(p[0].Text, "was removed from the context") {
		t.Errorf("the dropped image: %+v, want its note", p)
	}
	if m := got[5].Msg; m.Content != ToolImagesText || len(m.Parts) != 1 || m.Parts[0] != (provider.ContentPart{Type: "image", MimeType: "image/png", Data: png.Data}) {
		t.Errorf("the tool's image: %+v", m)
	}
	if len(got[3].Msg.Parts) != 0 {
		t.Errorf("the tool message carries parts: %+v", got[3].Msg.Parts)
	}
}
