package request

import (
	"testing"

	"github.com/crow-acp/crow-acp/internal/compaction"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// storedFromBytes turns fuzz input into a stored history: each byte is one
// message whose role, tool-call ids and content come from its bits, so the
// fuzzer explores orders (results before calls, orphans, duplicates, empty
// ids, interleaved prompts) that a crash, a bug or compaction could leave.
func storedFromBytes(in []byte) []persistence.Message {
	ids := []string{"", "call_a", "call_b", "call_c"}
	var out []persistence.Message
	for i, b := range in {
		m := persistence.Message{Seq: int64(i + 1), Status: persistence.StatusComplete, IsActive: true}
		switch b & 3 {
		case 0:
			m.Role, m.Content = persistence.RoleUser, "u"
		case 1:
			m.Role = persistence.RoleAssistant
			if b&4 != 0 {
				m.Content = "a"
			}
			for n := 0; n < int(b>>3&3); n++ {
				m.ToolCalls = append(m.ToolCalls, persistence.ToolCall{ID: ids[(int(b>>5)+n)&3], Name: "t", Arguments: "{}"})
			}
		case 2:
			m.Role, m.ToolCallID, m.Content = persistence.RoleTool, ids[b>>2&3], "r"
		case 3:
			m.Role, m.Content = persistence.RoleSummary, "s"
		}
		out = append(out, m)
	}
	return out
}

// FuzzContextMessages rebuilds the model context from arbitrary stored
// histories and checks the rules every OpenAI-compatible endpoint enforces:
// one system message first; each assistant tool call answered by exactly one
// tool result right after it; no tool result anywhere else.
func FuzzContextMessages(f *testing.F) {
	f.Add([]byte{0, 1})                   // prompt, reply
	f.Add([]byte{0, 1 | 8, 2 | 4, 1})     // prompt, call a, result a, reply
	f.Add([]byte{0, 1 | 16, 2 | 4})       // two calls, one result
	f.Add([]byte{2 | 4, 0, 1})            // orphan result first
	f.Add([]byte{0, 1 | 8 | 32, 2 | 8})   // call b, result b
	f.Add([]byte{0, 1 | 8, 0, 2 | 4})     // result after a later prompt
	f.Add([]byte{3, 0, 1 | 24 | 4, 2, 2}) // summary, empty ids
	f.Add([]byte{3, 0, 0, 1, 1, 0})       // summary, two prompts, two replies
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 512 {
			return
		}
		msgs := rebuild("system", storedFromBytes(in))
		checkContext(t, msgs)
	})
}

func checkContext(t *testing.T, msgs []provider.Message) {
	t.Helper()
	if len(msgs) == 0 || msgs[0].Role != provider.RoleSystem {
		t.Fatalf("context does not start with the system prompt: %+v", msgs)
	}
	pending := map[string]bool{} // calls of the last assistant message not yet answered
	for i, m := range msgs {
		if i > 0 && m.Role == provider.RoleSystem {
			t.Fatalf("message %d: a second system message", i)
		}
		if i > 1 && m.Role != provider.RoleTool && m.Role == msgs[i-1].Role {
			t.Fatalf("message %d: two %s messages in a row (strict chat templates refuse them)", i, m.Role)
		}
		if m.Role != provider.RoleTool && len(pending) > 0 {
			t.Fatalf("message %d (%s): calls %v were never answered", i, m.Role, pending)
		}
		switch m.Role {
		case provider.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID == "" || pending[c.ID] {
					t.Fatalf("message %d: empty or duplicate call id %q", i, c.ID)
				}
				pending[c.ID] = true
			}
			if m.Content == "" && len(m.ToolCalls) == 0 {
				t.Fatalf("message %d: empty assistant message", i)
			}
		case provider.RoleTool:
			if !pending[m.ToolCallID] {
				t.Fatalf("message %d: result for %q answers no pending call", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		}
	}
	if len(pending) > 0 {
		t.Fatalf("calls %v never answered", pending)
	}
}

// rebuild is the context a model request gets for a stored history (Order
// expects seq order, which the store guarantees).
func rebuild(system string, stored []persistence.Message) []provider.Message {
	return MessagesOf(ContextMessages(compaction.Estimator{}, system, stored))
}
