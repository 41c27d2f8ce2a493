package framelog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// newHoldSession drives a frame log whose writer commits every millisecond
// through a turn of session sess_a.
func newHoldSession(t *testing.T) *harness {
	h := newHarness(t, Options{FlushInterval: time.Millisecond}, "sess_a")
	h.send(acp.Inbound, `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"sess_a","prompt":[]}}`)
	return h
}

// stream sends n updates a chunk of text each, a few timer ticks apart, as a
// provider streams a reply.
func (h *harness) stream(n int) {
	for i := range n {
		h.send(acp.Outbound, textChunk(fmt.Sprintf("t%03d", i)))
		time.Sleep(2 * time.Millisecond)
	}
}

// runs is the frame count of every committed session/update event, in order.
func (h *harness) runs() []int {
	h.t.Helper()
	var runs []int
	for _, e := range h.events("sess_a") {
		if e.Method == "session/update" {
			runs = append(runs, len(eventFrames(h.t, &e)))
		}
	}
	return runs
}

// waitRuns waits (bounded) until the committed runs are want.
func (h *harness) waitRuns(want string) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for fmt.Sprint(h.runs()) != want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := fmt.Sprint(h.runs()); got != want {
		h.t.Fatalf("committed runs %s, want %s", got, want)
	}
}

// A reply streamed over many FlushIntervals with no write of the session
// is one event, not one per timer tick: the writer's timer holds the open
// run back, and the response commits it.
func TestStreamedRunHeldAcrossTimerFlushes(t *testing.T) {
	h := newHoldSession(t)
	h.stream(30) // ~60 timer ticks
	if runs := h.runs(); len(runs) != 0 {
		t.Errorf("runs %v committed by the timer while the turn streams, want none", runs)
	}
	h.send(acp.Outbound, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
	if got := fmt.Sprint(h.runs()); got != "[30]" {
		t.Errorf("runs %s after the response, want [30]", got)
	}
}

// The held run is committed by the session's next write, in its
// transaction and before its projection event; by the timer once anything
// is queued after it, once it is maxRunHold old or once it is full; and by
// Flush and Close.
func TestHeldRunCommittedByWriteBoundFlushClose(t *testing.T) {
	h := newHoldSession(t)
	ordered := h.j.Store(h.store)

	h.stream(10)
	msg := &persistence.Message{Role: persistence.RoleAssistant, Content: "t000", Status: persistence.StatusStreaming}
	if err := ordered.AppendMessages(h.ctx, "sess_a", msg); err != nil {
		t.Fatal(err)
	}
	evs := h.events("sess_a")
	n := len(evs)
	if n < 2 || evs[n-2].Method != "session/update" || len(eventFrames(t, &evs[n-2])) != 10 || evs[n-1].Kind != persistence.EventMessageAppended {
		var tail []string
		for i := max(0, n-2); i < n; i++ {
			tail = append(tail, fmt.Sprintf("%s %s (%d frames)", evs[i].Kind, evs[i].Method, len(eventFrames(t, &evs[i]))))
		}
		t.Fatalf("after the write the log ends %v, want the run of 10 then message_appended", tail)
	}

	// Something queued after the run closes it: the timer commits both.
	h.stream(5)
	h.send(acp.Inbound, `{"jsonrpc":"2.0","method":"_zed/ping","params":{"sessionId":"sess_a"}}`)
	h.waitRuns("[10 5]")

	// A run as old as maxRunHold is committed by the timer.
	h.stream(4)
	h.j.mu.Lock()
	h.j.pending[len(h.j.pending)-1].At = time.Now().Add(-maxRunHold)
	h.j.mu.Unlock()
	h.waitRuns("[10 5 4]")

	// A run that reached maxRunBody is committed by the timer (the
	// frame that did not fit starts the next, held, run).
	big := strings.Repeat("x", maxRunBody/2-200)
	for range 3 {
		h.send(acp.Outbound, textChunk(big))
	}
	h.waitRuns("[10 5 4 2]")

	h.j.Flush(h.ctx)
	if got := fmt.Sprint(h.runs()); got != "[10 5 4 2 1]" {
		t.Errorf("runs %s after Flush, want [10 5 4 2 1]", got)
	}
	h.stream(2)
	h.j.Close()
	if got := fmt.Sprint(h.runs()); got != "[10 5 4 2 1 2]" {
		t.Errorf("runs %s after Close, want [10 5 4 2 1 2]", got)
	}
}
