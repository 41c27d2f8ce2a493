package framelog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestPipelinedLoads: a client may send its next session/load (or a
// session/resume, then a load) while the previous load is still replaying,
// or after its response but before the updates after it (commands, usage)
// are written: the read loop reads it at once, the dispatcher handles it
// after the earlier load's response and the updates after it. Each load's
// tally counts its own replay, the updates after a response belong to its
// load, not to the next one's replay, and no replayed frame is recorded.
func TestPipelinedLoads(t *testing.T) {
	h := newHarness(t, Options{}, "sess_a")
	after := func(id int) { // the updates after a response, the agent's record
		h.send(acp.Outbound, upd("available_commands_update", id), upd("usage_update", id))
		h.j.Record(h.ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 10})
	}
	// Load 1 replays; loads 2 and (after a resume) 4 are read meanwhile.
	h.send(acp.Inbound, loadReq(1, "session/load"))
	h.replay(4)
	h.send(acp.Inbound, loadReq(2, "session/load"), loadReq(3, "session/resume"), loadReq(4, "session/load"))
	h.replay(6)
	h.send(acp.Outbound, okResult(1))
	after(1)
	h.replay(10)
	h.send(acp.Outbound, okResult(2))
	after(2)
	h.send(acp.Outbound, okResult(3))
	after(3)
	h.replay(10)
	h.send(acp.Outbound, okResult(4))
	// Loads 5 to 7 are each read after the previous one's response, before
	// the updates after it.
	for i := 5; i <= 7; i++ {
		h.send(acp.Inbound, loadReq(i, "session/load"))
		after(i - 1)
		h.replay(10)
		h.send(acp.Outbound, okResult(i))
	}
	after(7)
	for i := 1; i <= 7; i++ { // in the log each load's own frames are together
		method := "session/load"
		if i == 3 {
			method = "session/resume"
		}
		h.kept = append(h.kept, loadReq(i, method), okResult(i), upd("available_commands_update", i), upd("usage_update", i))
	}
	if got := replayTallies(t, h.checkKept("sess_a")); got != "[10 10 -1 10 10 10 10]" {
		t.Errorf("replays tallied %s, want [10 10 -1 10 10 10 10] (the resume replays nothing)", got)
	}
}

// dropLoadStore refuses, once, a batch of events holding a session_loaded
// event (a full disk, a lost connection to PostgreSQL).
type dropLoadStore struct {
	persistence.Store
	dropped bool
}

func (d *dropLoadStore) AppendEvents(ctx context.Context, evs ...*persistence.Event) error {
	for _, e := range evs {
		if e.Kind == persistence.EventSessionLoaded && !d.dropped {
			d.dropped = true
			return errors.New("disk full")
		}
	}
	return d.Store.AppendEvents(ctx, evs...)
}

// TestLoadAfterADroppedLoadRecord: when the store refuses the batch that
// holds a load's session_loaded event (the frame log drops it and logs), the
// next load of the session is not stored as differences from that lost
// load: its frames still read back.
func TestLoadAfterADroppedLoadRecord(t *testing.T) {
	ctx := context.Background()
	real, _ := openStore(t, "sess_a")
	store := &dropLoadStore{Store: real}
	j := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: 1 << 40})
	frames := newLoadFrames("sess_a")
	driveLoad(ctx, j, "sess_a", frames(1))
	want := driveLoad(ctx, j, "sess_a", frames(2))
	j.Close()
	if !store.dropped {
		t.Fatal("no batch was refused")
	}
	evs, err := real.Events(ctx, "sess_a", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if back := framesOf(t, evs); strings.Join(back, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames back, want the second load's: %s", firstDiff(back, want))
	}
}

// TestPipelinedLoadsConcurrently: the read loop records many session/load
// requests at once while the dispatcher answers them one by one (replay,
// response, the updates after it, the agent's record) and the writer
// commits every millisecond; the frame log then closes. Run with -race:
// every load is one session_loaded event with its own frames and its own
// replay's tally, and no replayed frame is recorded.
func TestPipelinedLoadsConcurrently(t *testing.T) {
	h := newHarness(t, Options{FlushInterval: time.Millisecond}, "sess_a")
	const loads = 20
	read := make(chan int, loads)
	go func() { // the read loop
		for i := 1; i <= loads; i++ {
			h.send(acp.Inbound, loadReq(i, "session/load"))
			read <- i
		}
		close(read)
	}()
	for i := range read { // the dispatcher
		h.replay(5)
		h.send(acp.Outbound, okResult(i), upd("available_commands_update", i))
		h.j.Record(h.ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 5})
		h.kept = append(h.kept, loadReq(i, "session/load"), okResult(i), upd("available_commands_update", i))
	}
	recs := loadedRecords(t, h.checkKept("sess_a"))
	if len(recs) != loads {
		t.Errorf("%d session_loaded events, want %d", len(recs), loads)
	}
	for _, d := range recs {
		if d.Replay == nil || d.Replay.Frames != 5 || d.Replay.Messages != 5 {
			t.Errorf("session_loaded replay %+v: want 5 frames, 5 messages", d.Replay)
		}
	}
}

// TestQueuedLoadAfterAWriteDuringTheLoad: a write to the session right
// after a load's response (the load-time compaction check may compact)
// records that load before the updates after its response are sent; a
// load read meanwhile starts its replay only once the agent has recorded
// the first load, so those updates are kept in the log, not counted as
// the second load's replay.
func TestQueuedLoadAfterAWriteDuringTheLoad(t *testing.T) {
	h := newHarness(t, Options{}, "sess_a")
	ordered := h.j.Store(h.store)
	h.send(acp.Inbound, loadReq(1, "session/load"), loadReq(2, "session/load")) // the second read ahead
	for i := 1; i <= 2; i++ {
		h.replay(5)
		h.send(acp.Outbound, okResult(i))
		if i == 1 {
			if err := ordered.AppendMessages(h.ctx, "sess_a", &persistence.Message{Role: persistence.RoleSummary, Content: "compacted on load"}); err != nil {
				t.Fatal(err)
			}
		}
		h.send(acp.Outbound, upd("available_commands_update", i))
		h.j.Record(h.ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 5})
	}
	h.j.Close()
	evs := h.events("sess_a")
	back := strings.Join(framesOf(t, evs), "\n")
	for i := 1; i <= 2; i++ {
		for _, f := range []string{loadReq(i, "session/load"), okResult(i), upd("available_commands_update", i)} {
			if !strings.Contains(back, f) {
				t.Errorf("not in the log: %s", f)
			}
		}
	}
	if strings.Contains(back, "agent_message_chunk") {
		t.Errorf("a replayed frame is in the log:\n%s", back)
	}
	if got := replayTallies(t, evs); got != "[5 5]" {
		t.Errorf("replays tallied %s, want [5 5]", got)
	}
}
