package framelog

import (
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestArchiveClosesInTheLog: session/archive closes the session as
// session/close does, so the frame log says so once, with the method as
// the reason, and not again when the connection ends.
func TestArchiveClosesInTheLog(t *testing.T) {
	h := newHarness(t, Options{}, "sess_a")
	h.send(acp.Inbound, `{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	h.send(acp.Outbound, `{"jsonrpc":"2.0","id":0,"result":{"sessionId":"sess_a"}}`)
	h.send(acp.Inbound, `{"jsonrpc":"2.0","id":1,"method":"session/archive","params":{"sessionId":"sess_a"}}`)
	h.send(acp.Outbound, okResult(1))
	h.j.Close()
	var closed []string
	for _, e := range h.events("sess_a") {
		if e.Kind == persistence.EventSessionClosed {
			closed = append(closed, string(e.Body))
		}
	}
	if len(closed) != 1 || !strings.Contains(closed[0], `"reason":"session/archive"`) {
		t.Fatalf("session_closed events %q, want one with reason session/archive", closed)
	}
}
