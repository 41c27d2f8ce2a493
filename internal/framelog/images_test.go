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
