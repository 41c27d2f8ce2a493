package framelog

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// harness drives the frame log of a connection over a SQLite store of the
// test's own and keeps the frames the log must give back.
type harness struct {
	t     *testing.T
	ctx   context.Context
	store *sqlite.Store
	j     *Log
	kept  []string // frames sent that the log keeps, in order
}

// newHarness opens a frame log on a store holding the sessions named.
// Options default to connection conn_1 and a writer whose timer never
// fires: only responses, writes, Flush and Close commit.
func newHarness(t *testing.T, opts Options, sessions ...string) *harness {
	t.Helper()
	if opts.ConnectionID == "" {
		opts.ConnectionID = "conn_1"
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = 1 << 40
	}
	h := &harness{t: t, ctx: context.Background()}
	h.store, _ = openStore(t, sessions...)
	h.j = Open(h.ctx, h.store, opts)
	t.Cleanup(h.j.Close)
	return h
}

// send hands frames to the frame log.
func (h *harness) send(dir acp.Direction, frames ...string) {
	for _, f := range frames {
		h.j.OnFrame(dir, []byte(f))
	}
}

// keep sends frames the log must give back.
func (h *harness) keep(dir acp.Direction, frames ...string) {
	h.send(dir, frames...)
	h.kept = append(h.kept, frames...)
}

// events is the stream's events as stored.
func (h *harness) events(stream string) []persistence.Event {
	h.t.Helper()
	evs, err := h.store.Events(h.ctx, stream, persistence.EventFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

// checkKept closes the frame log and checks that the frames of the stream's
// events are the kept frames, byte for byte and in order; it returns the
// events.
func (h *harness) checkKept(stream string) []persistence.Event {
	h.t.Helper()
	h.j.Close()
	evs := h.events(stream)
	if back := framesOf(h.t, evs); strings.Join(back, "\n") != strings.Join(h.kept, "\n") {
		h.t.Errorf("frames back:\n%s\nwant:\n%s", strings.Join(back, "\n"), strings.Join(h.kept, "\n"))
	}
	return evs
}

// openStore is a SQLite store in a file of the test's own (the load-record
// test and benchmark measure its pages) holding the sessions named (in
// /tmp), and the file's path.
func openStore(tb testing.TB, sessions ...string) (*sqlite.Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "crow.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	for _, id := range sessions {
		if err := s.CreateSession(context.Background(), &persistence.Session{ID: id, Cwd: "/tmp"}); err != nil {
			tb.Fatal(err)
		}
	}
	return s, path
}

// upd is a session/update of sess_a of the kind, numbered n.
func upd(kind string, n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":%q,"n":%d}}}`, kind, n)
}

// loadReq is a request of sess_a with the method of session/load's params.
func loadReq(id int, method string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"sessionId":"sess_a","cwd":"/tmp","mcpServers":[]}}`, id, method)
}

// okResult is an empty successful response.
func okResult(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id) }

// textChunk is a streamed agent_message_chunk of sess_a.
func textChunk(text string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + text + `"}}}}`
}

// replay sends n updates of sess_a, as a load replays its conversation
// (the log does not keep them).
func (h *harness) replay(n int) {
	for k := range n {
		h.send(acp.Outbound, upd("agent_message_chunk", k))
	}
}

// loaded is what a session_loaded event's record says.
type loaded struct {
	Replay *struct {
		Frames, Bytes, Messages, LastSeq int
		CRC32C                           string
	}
}

// loadedRecords reads the records of the session_loaded events in evs.
func loadedRecords(t *testing.T, evs []persistence.Event) []loaded {
	t.Helper()
	var out []loaded
	for _, e := range evs {
		if e.Kind != persistence.EventSessionLoaded {
			continue
		}
		var d loaded
		if err := json.Unmarshal(e.Body, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// replayTallies is the replayed frame count of each load in evs (-1: a
// session_loaded event without a replay).
func replayTallies(t *testing.T, evs []persistence.Event) string {
	t.Helper()
	var n []int
	for _, d := range loadedRecords(t, evs) {
		if d.Replay == nil {
			n = append(n, -1)
		} else {
			n = append(n, d.Replay.Frames)
		}
	}
	return fmt.Sprint(n)
}

// framesOf reads the frames of a stream's events back (Frames).
func framesOf(t *testing.T, evs []persistence.Event) []string {
	t.Helper()
	fs, err := Frames(evs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Body))
	}
	return out
}

// eventFrames is e.Frames, failing t on an error.
func eventFrames(t *testing.T, e *persistence.Event) [][]byte {
	t.Helper()
	frames, err := e.Frames(persistence.NewBudget(persistence.MaxDecoded))
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("frame %d: back %.200q, sent %.200q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}
