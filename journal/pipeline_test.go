package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
)

// TestLoadPipelinedDuringReplay: a client may send its next session/load
// (or a session/resume, then a load) while the previous load is still
// replaying: the read loop reads it at once, the dispatcher handles it
// after the first load's response and the updates after it. Each load's
// tally counts its own replay, and no replayed frame is recorded.
func TestLoadPipelinedDuringReplay(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, "sess_a")
	j := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: 1 << 40})
	var want []string
	upd := func(kind string, i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":%q,"n":%d}}}`, kind, i)
	}
	replay := func(n int) {
		for k := range n {
			j.OnFrame(acp.Outbound, []byte(upd("agent_message_chunk", k)))
		}
	}
	request := func(id int, method string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"sessionId":"sess_a","cwd":"/tmp","mcpServers":[]}}`, id, method)
	}
	response := func(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id) }
	after := func(i int) {
		j.OnFrame(acp.Outbound, []byte(upd("available_commands_update", i)))
		j.Record(ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 10})
	}

	// Load 1 replays; loads 2 and (after a resume) 4 are read meanwhile.
	j.OnFrame(acp.Inbound, []byte(request(1, "session/load")))
	replay(4)
	j.OnFrame(acp.Inbound, []byte(request(2, "session/load")))
	j.OnFrame(acp.Inbound, []byte(request(3, "session/resume")))
	j.OnFrame(acp.Inbound, []byte(request(4, "session/load")))
	replay(6)
	j.OnFrame(acp.Outbound, []byte(response(1)))
	after(1)
	replay(10)
	j.OnFrame(acp.Outbound, []byte(response(2)))
	after(2)
	j.OnFrame(acp.Outbound, []byte(response(3)))
	j.OnFrame(acp.Outbound, []byte(upd("available_commands_update", 3)))
	j.Record(ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{})
	replay(10)
	j.OnFrame(acp.Outbound, []byte(response(4)))
	after(4)
	j.Close()
	for i := 1; i <= 4; i++ {
		method := "session/load"
		if i == 3 {
			method = "session/resume"
		}
		want = append(want, request(i, method), response(i), upd("available_commands_update", i))
	}

	evs, err := store.Events(ctx, "sess_a", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if back := framesOf(t, evs); strings.Join(back, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames back:\n%s\nwant (no replayed frame, each load's own together):\n%s", strings.Join(back, "\n"), strings.Join(want, "\n"))
	}
	var tallies []int
	for _, e := range evs {
		if e.Kind != persistence.EventSessionLoaded {
			continue
		}
		var d struct {
			Via    string
			Replay *struct{ Frames int } `json:"replay"`
		}
		rec, err := e.Record()
		if err == nil {
			err = json.Unmarshal(rec, &d)
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.Via == "session/resume" && d.Replay != nil:
			t.Errorf("the resume's session_loaded has a replay: %s", rec)
		case d.Via == "session/load" && d.Replay == nil:
			t.Errorf("a load's session_loaded has no replay: %s", rec)
		case d.Via == "session/load":
			tallies = append(tallies, d.Replay.Frames)
		}
	}
	if fmt.Sprint(tallies) != "[10 10 10]" {
		t.Errorf("replays tallied %v, want [10 10 10]", tallies)
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
// holds a load's session_loaded event (the journal drops it and logs), the
// next load of the session is not stored as differences from that lost
// load: its frames still read back.
func TestLoadAfterADroppedLoadRecord(t *testing.T) {
	ctx := context.Background()
	real := openStore(t)
	if err := real.CreateSession(ctx, &persistence.Session{ID: "sess_a", Cwd: "/tmp"}); err != nil {
		t.Fatal(err)
	}
	store := &dropLoadStore{Store: real}
	j := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: 1 << 40})
	frames := newLoadFrames("sess_a")
	var want []string
	for i := 1; i <= 2; i++ {
		fs := frames(i)
		j.OnFrame(acp.Inbound, fs[0])
		j.OnFrame(acp.Outbound, fs[1])
		for _, f := range fs[2:] {
			j.OnFrame(acp.Outbound, f)
		}
		j.Record(ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{})
		if i == 2 {
			for _, f := range fs {
				want = append(want, string(f))
			}
		}
	}
	j.Close()
	if !store.dropped {
		t.Fatal("no batch was refused")
	}
	evs, err := real.Events(ctx, "sess_a", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if back := framesOf(t, evs); strings.Join(back, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames back:\n%s\nwant the second load's:\n%s", strings.Join(back, "\n"), strings.Join(want, "\n"))
	}
}

// TestPipelinedLoadsConcurrently: the read loop records many session/load
// requests at once while the dispatcher answers them one by one (replay,
// response, the updates after it, the agent's record) and the writer
// commits every millisecond; the journal then closes. Run with -race:
// every load is one session_loaded event with its own frames and its own
// replay's tally, and no replayed frame is recorded.
func TestPipelinedLoadsConcurrently(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, "sess_a")
	j := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: time.Millisecond})
	const loads = 20
	request := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/load","params":{"sessionId":"sess_a","cwd":"/tmp","mcpServers":[]}}`, id)
	}
	upd := func(kind string, i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":%q,"n":%d}}}`, kind, i)
	}
	read := make(chan int, loads)
	go func() { // the read loop
		for i := 1; i <= loads; i++ {
			j.OnFrame(acp.Inbound, []byte(request(i)))
			read <- i
		}
		close(read)
	}()
	var want []string
	for i := range read { // the dispatcher
		for k := range 5 {
			j.OnFrame(acp.Outbound, []byte(upd("agent_message_chunk", k)))
		}
		j.OnFrame(acp.Outbound, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i)))
		j.OnFrame(acp.Outbound, []byte(upd("available_commands_update", i)))
		j.Record(ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 5})
		want = append(want, request(i), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i), upd("available_commands_update", i))
	}
	j.Close()
	evs, err := store.Events(ctx, "sess_a", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if back := framesOf(t, evs); strings.Join(back, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames back:\n%s\nwant:\n%s", strings.Join(back, "\n"), strings.Join(want, "\n"))
	}
	n := 0
	for _, e := range evs {
		if e.Kind != persistence.EventSessionLoaded {
			continue
		}
		n++
		var d struct {
			Replay struct{ Frames, Messages int } `json:"replay"`
		}
		rec, err := e.Record()
		if err == nil {
			err = json.Unmarshal(rec, &d)
		}
		if err != nil || d.Replay.Frames != 5 || d.Replay.Messages != 5 {
			t.Errorf("session_loaded %s: want a replay of 5 frames, 5 messages", rec)
		}
	}
	if n != loads {
		t.Errorf("%d session_loaded events, want %d", n, loads)
	}
}

// TestQueuedLoadAfterAWriteDuringTheLoad: a write to the session right
// after a load's response (the load-time compaction check may compact)
// records that load before the updates after its response are sent; a
// load read meanwhile starts its replay only once the agent has recorded
// the first load, so those updates are kept in the log, not counted as
// the second load's replay.
func TestQueuedLoadAfterAWriteDuringTheLoad(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, "sess_a")
	j := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: 1 << 40})
	ordered := j.Store(store)
	request := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/load","params":{"sessionId":"sess_a","cwd":"/tmp","mcpServers":[]}}`, id)
	}
	upd := func(kind string, i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":%q,"n":%d}}}`, kind, i)
	}
	j.OnFrame(acp.Inbound, []byte(request(1)))
	j.OnFrame(acp.Inbound, []byte(request(2))) // read ahead
	for i := 1; i <= 2; i++ {
		for k := range 5 {
			j.OnFrame(acp.Outbound, []byte(upd("agent_message_chunk", k)))
		}
		j.OnFrame(acp.Outbound, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i)))
		if i == 1 {
			if err := ordered.AppendMessages(ctx, "sess_a", &persistence.Message{Role: persistence.RoleSummary, Content: "compacted on load"}); err != nil {
				t.Fatal(err)
			}
		}
		j.OnFrame(acp.Outbound, []byte(upd("available_commands_update", i)))
		j.Record(ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 5})
	}
	j.Close()
	evs, err := store.Events(ctx, "sess_a", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	back := strings.Join(framesOf(t, evs), "\n")
	for i := 1; i <= 2; i++ {
		for _, f := range []string{request(i), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i), upd("available_commands_update", i)} {
			if !strings.Contains(back, f) {
				t.Errorf("not in the log: %s", f)
			}
		}
	}
	if strings.Contains(back, "agent_message_chunk") {
		t.Errorf("a replayed frame is in the log:\n%s", back)
	}
	var tallies []int
	for _, e := range evs {
		if e.Kind != persistence.EventSessionLoaded {
			continue
		}
		var d struct {
			Replay struct{ Frames int } `json:"replay"`
		}
		rec, err := e.Record()
		if err == nil {
			err = json.Unmarshal(rec, &d)
		}
		if err != nil {
			t.Fatal(err)
		}
		tallies = append(tallies, d.Replay.Frames)
	}
	if fmt.Sprint(tallies) != "[5 5]" {
		t.Errorf("replays tallied %v, want [5 5]", tallies)
	}
}
