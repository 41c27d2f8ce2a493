package framelog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestOpenLoadTakesAtMost64KB: the updates sent right after a load's
// response join its session_loaded event up to maxOpenLoad bytes; the
// update that would pass it closes the load, and it and the rest are
// frame events of their own. Every frame comes back, in order.
func TestOpenLoadTakesAtMost64KB(t *testing.T) {
	h := newHarness(t, Options{}, "sess_a")
	h.keep(acp.Inbound, loadReq(1, "session/load"))
	h.replay(3)
	h.keep(acp.Outbound, okResult(1))
	pad := strings.Repeat("x", 1000)
	for k := range 100 { // ~100 KB after the response
		h.keep(acp.Outbound, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":"available_commands_update","n":%d,"pad":%q}}}`, k, pad))
	}
	evs := h.checkKept("sess_a")
	var loaded, loose int
	for _, e := range evs {
		switch {
		case e.Kind == persistence.EventSessionLoaded:
			loaded++
			if len(e.Body) > maxOpenLoad+4<<10 {
				t.Errorf("session_loaded event of %d bytes: the open load took more than %d", len(e.Body), maxOpenLoad)
			}
		case e.Kind == persistence.EventNotification:
			loose += len(eventFrames(t, &e))
		}
	}
	if loaded != 1 || loose == 0 || loose >= 100 {
		t.Fatalf("%d session_loaded events and %d updates of their own: want one load taking the first 64 KB, the rest outside", loaded, loose)
	}
}
