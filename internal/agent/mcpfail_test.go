package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// An MCP server that did not start is never reply text (issue 15 item 9):
// a notice for a client that takes them, a failed card for any other.
func TestMCPFailureIsNotReplyText(t *testing.T) {
	const failure = `MCP server "x" failed to start: boom. Its tools are not available in this session.`
	card := mcpFailureUpdate(acp.ClientCapabilities{}, failure)
	if card.ToolCall == nil || card.ToolCall.Status != acp.ToolStatusFailed || card.AgentMessageChunk != nil {
		t.Fatalf("without notices: %+v, want a failed tool call", card)
	}
	raw := json.RawMessage(`{}`)
	notice := mcpFailureUpdate(acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{Notices: &raw}}, failure)
	b, err := json.Marshal(notice)
	if err != nil || !strings.Contains(string(b), `"sessionUpdate":"notice"`) || !strings.Contains(string(b), `"severity":"error"`) {
		t.Fatalf("with notices: %s (%v), want an error notice", b, err)
	}
}
