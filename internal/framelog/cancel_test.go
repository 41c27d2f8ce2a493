package framelog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestCancelFollowsItsRequest: a $/cancel_request is recorded after the
// request it names, also when the log holds that request back (a load's,
// kept for its session_loaded event; an over-size prompt, kept until its
// answer says whether it was refused as too large).
func TestCancelFollowsItsRequest(t *testing.T) {
	h := newHarness(t, Options{MaxPromptBytes: 64}, "sess_a")
	cancel := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}`, id)
	}
	// A load cancelled during its replay (the replay itself is not kept).
	h.keep(acp.Inbound, loadReq(1, "session/load"))
	h.replay(1)
	h.keep(acp.Inbound, cancel(1))
	h.keep(acp.Outbound, `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled."}}`)
	// A load that succeeds, so the session is open for a prompt.
	h.keep(acp.Inbound, loadReq(2, "session/load"))
	h.keep(acp.Outbound, okResult(2))
	h.j.Record(h.ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{})
	// An over-size prompt, cancelled twice before its answer.
	h.keep(acp.Inbound, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_a","prompt":[{"type":"text","text":"`+strings.Repeat("long ", 40)+`"}]}}`)
	h.keep(acp.Inbound, cancel(3), cancel(3))
	h.keep(acp.Outbound, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`)
	h.checkKept("sess_a")
}
