package framelog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestLoadReplayingFullSizeImages: a session/load that replays several
// images at the limit (20 MiB each, 27 MiB in base64: 80 MiB of replay,
// more than maxLoadBytes) is still one small session_loaded event that
// reads back: the replay is counted, never part of the load's record, so a
// load is never "damaged load record: too large". A second load of the
// same session (stored as differences) reads back too.
func TestLoadReplayingFullSizeImages(t *testing.T) {
	h := newHarness(t, Options{}, "sess_a")
	image := strings.Repeat("A", 27<<20+700<<10) // base64 of 20 MiB
	frame := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":"user_message_chunk","content":{"type":"image","mimeType":"image/png","data":"%s"},"messageId":"msg_%d"}}}`, image, n)
	}
	replayed := 0
	for id := 1; id <= 2; id++ {
		h.keep(acp.Inbound, loadReq(id, "session/load"))
		for k := range 3 {
			f := frame(k)
			replayed += len(f)
			h.send(acp.Outbound, f)
		}
		h.keep(acp.Outbound, okResult(id))
		h.j.Record(h.ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 3}) // as the agent does
	}
	if replayed <= maxLoadBytes {
		t.Fatalf("the replay is %d bytes, not over the load record's cap %d", replayed, maxLoadBytes)
	}
	evs := h.checkKept("sess_a")
	loads := 0
	for _, e := range evs {
		if e.Kind == persistence.EventSessionLoaded {
			loads++
			if len(e.Body) > 64<<10 {
				t.Errorf("session_loaded event of %d bytes: the replay's images went into it", len(e.Body))
			}
		}
	}
	if loads != 2 {
		t.Fatalf("%d session_loaded events, want 2", loads)
	}
	for i, d := range loadedRecords(t, evs) {
		if d.Replay == nil || d.Replay.Frames != 3 || d.Replay.Bytes < replayed/2 {
			t.Errorf("load %d's replay tally: %+v; want 3 frames of %d bytes", i, d.Replay, replayed/2)
		}
	}
}

// TestAcceptedPromptIsNotHeld: a prompt over the text limit (its images
// make it so) is held only until the agent accepts it: it is committed
// with the next write, before its turn ends, and a cancel waiting behind it
// follows it. One refused as too large still leaves only a marker.
func TestAcceptedPromptIsNotHeld(t *testing.T) {
	h := newHarness(t, Options{MaxPromptBytes: 64}, "sess_a")
	h.keep(acp.Inbound, loadReq(1, "session/load"))
	h.keep(acp.Outbound, okResult(1))
	h.j.Record(h.ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{})
	prompt := func(id int, data string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess_a","prompt":[{"type":"image","mimeType":"image/png","data":%q}]}}`, id, data)
	}
	refused := prompt(2, strings.Repeat("B", 300))
	h.send(acp.Inbound, refused)
	h.send(acp.Outbound, `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"too large","data":{"index":0,"problem":"too_large","size":225,"limit":100}}}`)
	accepted := prompt(3, strings.Repeat("A", 300))
	h.keep(acp.Inbound, accepted)
	h.keep(acp.Inbound, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}`)
	h.j.PromptAccepted("sess_a")
	h.j.Flush(h.ctx)
	found := false
	for _, e := range h.events("sess_a") {
		for _, f := range eventFrames(t, &e) {
			found = found || string(f) == accepted
			if strings.Contains(string(f), `"id":2,"method"`) && strings.Contains(string(f), "BBBB") {
				t.Error("the refused prompt's body was kept")
			}
		}
	}
	if !found {
		t.Fatal("the accepted prompt is still held before its answer")
	}
	h.keep(acp.Outbound, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	h.j.Close()
	back := framesOf(t, h.events("sess_a"))
	if n := strings.Count(strings.Join(back, "\n"), accepted); n != 1 {
		t.Fatalf("the accepted prompt is in the log %d times, want once", n)
	}
}
