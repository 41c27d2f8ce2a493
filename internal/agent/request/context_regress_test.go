package request

import (
	"testing"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Regressions found by FuzzContextMessages: stored histories the old rebuild
// turned into requests every endpoint rejects.

func TestContextDropsOrphanResult(t *testing.T) {
	stored := []persistence.Message{
		{Role: persistence.RoleTool, ToolCallID: "call_gone", Content: "result of a compacted call"},
		{Role: persistence.RoleUser, Content: "next"},
	}
	msgs := rebuild("sys", stored)
	checkContext(t, msgs)
	if len(msgs) != 2 || msgs[1].Role != provider.RoleUser {
		t.Fatalf("orphan result kept: %+v", msgs)
	}
}

func TestContextPairsReusedIDsByPosition(t *testing.T) {
	// Some local servers number calls call_0, call_1... afresh every reply.
	call := []persistence.ToolCall{{ID: "call_0", Name: "ls", Arguments: "{}"}}
	stored := []persistence.Message{
		{Role: persistence.RoleUser, Content: "one"},
		{Role: persistence.RoleAssistant, ToolCalls: call},
		{Role: persistence.RoleTool, ToolCallID: "call_0", Content: "first"},
		{Role: persistence.RoleAssistant, ToolCalls: call},
		{Role: persistence.RoleTool, ToolCallID: "call_0", Content: "second"},
		{Role: persistence.RoleAssistant, Content: "done"},
	}
	msgs := rebuild("sys", stored)
	checkContext(t, msgs)
	var got []string
	for _, m := range msgs {
		if m.Role == provider.RoleTool {
			got = append(got, m.Content)
		}
	}
	if len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Fatalf("results %q, want [first second]", got)
	}
}

func TestContextSkipsCallsWithoutID(t *testing.T) {
	stored := []persistence.Message{
		{Role: persistence.RoleUser, Content: "hi"},
		{Role: persistence.RoleAssistant, ToolCalls: []persistence.ToolCall{{ID: "", Name: "ls"}, {ID: "c", Name: "ls"}, {ID: "c", Name: "pwd"}}},
	}
	msgs := rebuild("sys", stored)
	checkContext(t, msgs)
	if n := len(msgs[2].ToolCalls); n != 1 {
		t.Fatalf("%d calls kept, want 1 (empty and duplicate ids dropped): %+v", n, msgs[2].ToolCalls)
	}
	if msgs[3].Content != compaction.InterruptedResult {
		t.Fatalf("missing result not marked interrupted: %+v", msgs[3])
	}
}
