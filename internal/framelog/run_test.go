package framelog

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// A streamed reply's session/update frames are stored as one event, one
// frame per line, in order; anything else between them, a new turn, a
// commit or the size cap starts a new event; every frame is kept.
func TestStreamedUpdatesShareAnEvent(t *testing.T) {
	h := newHarness(t, Options{}, "sess_a")
	prompt := func(id int) {
		h.keep(acp.Inbound, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess_a","prompt":[]}}`, id))
	}
	answer := func(id int) {
		h.keep(acp.Outbound, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, id))
	}
	prompt(1)
	for i := range 5 {
		h.keep(acp.Outbound, textChunk(fmt.Sprintf("a%d", i))) // one event of 5
	}
	h.keep(acp.Inbound, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_a"}}`)
	h.keep(acp.Outbound, textChunk("b0"), textChunk("b1")) // after an inbound frame: a new event
	h.j.Flush(h.ctx)
	big := strings.Repeat("x", maxRunBody/2)
	h.keep(acp.Outbound, textChunk("c0"), textChunk(big)) // after a commit: a new event
	h.keep(acp.Outbound, textChunk(big))                  // over the cap: a new event
	answer(1)                                             // commits
	prompt(2)
	h.keep(acp.Outbound, textChunk("d0")) // a new turn: a new event
	answer(2)

	var runs []int
	var turns []int64 // a turn ends with its prompt's response
	for _, e := range h.checkKept("sess_a") {
		fs := eventFrames(t, &e)
		if e.Method == "session/update" {
			runs, turns = append(runs, len(fs)), append(turns, e.Turn)
			if joined := bytes.Join(fs, []byte("\n")); !bytes.Equal(e.Body, joined) && len(e.Body) >= len(joined) {
				t.Errorf("event %d: body is neither its frames joined nor smaller packed", e.Seq)
			}
		} else if len(fs) > 1 {
			t.Errorf("event %d (%s %s) holds %d frames", e.Seq, e.Kind, e.Method, len(fs))
		}
	}
	if fmt.Sprint(runs) != "[5 2 2 1 1]" || fmt.Sprint(turns) != "[1 1 1 1 2]" {
		t.Errorf("session/update events hold %v frames of turns %v, want [5 2 2 1 1] of [1 1 1 1 2]", runs, turns)
	}
}

// refusingStore cannot record connections, as a read-only database.
type refusingStore struct{ persistence.Store }

func (refusingStore) CreateConnection(context.Context, *persistence.Connection) error {
	return persistence.ErrStorageReadOnly
}

// When the connection cannot be recorded, the frame log turns itself off:
// frames are not kept and nothing is written, and the connection is served
// as before.
func TestJournalOffWhenConnectionNotRecorded(t *testing.T) {
	ctx := context.Background()
	store, _ := openStore(t)
	j := Open(ctx, refusingStore{store}, Options{ConnectionID: "conn_ro"})
	j.OnFrame(acp.Inbound, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	j.OnFrame(acp.Outbound, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)) // flushes
	j.Close()
	if !j.off.Load() || j.Recording() {
		t.Fatal("journal still on")
	}
	evs, err := store.Events(ctx, "conn_ro", persistence.EventFilter{})
	if err != nil || len(evs) != 0 {
		t.Fatalf("%d events stored, %v", len(evs), err)
	}
}

// orderStore notes the order of the connection record and event writes.
type orderStore struct {
	persistence.Store
	hold  chan struct{} // the record waits for its close (a store still opening)
	mu    sync.Mutex
	calls []string
}

func (o *orderStore) note(c string) {
	o.mu.Lock()
	o.calls = append(o.calls, c)
	o.mu.Unlock()
}

func (o *orderStore) CreateConnection(ctx context.Context, c *persistence.Connection) error {
	<-o.hold
	o.note("connection")
	return o.Store.CreateConnection(ctx, c)
}

func (o *orderStore) AppendEvents(ctx context.Context, evs ...*persistence.Event) error {
	o.note("events")
	return o.Store.AppendEvents(ctx, evs...)
}

// answer sends frame out through j in the background: the channel closes
// once OnFrame returns.
func answer(j *Log, frame string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.OnFrame(acp.Outbound, []byte(frame))
	}()
	return done
}

// The connection's record is written before any of its frames. The answer
// to initialize does not wait for it (issue 30: the store may still be
// opening): its frames are committed right after the record, in order.
func TestConnectionRecordedBeforeFrames(t *testing.T) {
	ctx := context.Background()
	real, _ := openStore(t)
	store := &orderStore{Store: real, hold: make(chan struct{})}
	j := Open(ctx, store, Options{ConnectionID: "conn_1"})
	j.OnFrame(acp.Inbound, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	select {
	case <-answer(j, `{"jsonrpc":"2.0","id":1,"result":{}}`):
	case <-time.After(2 * time.Second):
		t.Fatal("the answer to initialize waited for the connection's record")
	}
	close(store.hold)
	var evs []persistence.Event
	for deadline := time.Now().Add(5 * time.Second); len(evs) < 2 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		evs, _ = real.Events(ctx, "conn_1", persistence.EventFilter{})
	}
	if len(evs) != 2 || evs[0].Kind != persistence.EventRequest || evs[1].Kind != persistence.EventResponse {
		t.Fatalf("after the record: %d events %v, want initialize's request and response", len(evs), evs)
	}
	j.Close()
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.calls) < 2 || store.calls[0] != "connection" || store.calls[1] != "events" {
		t.Fatalf("writes in order %v, want the connection first", store.calls)
	}
}

// A response in a session still waits for the connection's record and
// every frame before it.
func TestSessionResponseWaitsForRecord(t *testing.T) {
	ctx := context.Background()
	real, _ := openStore(t)
	store := &orderStore{Store: real, hold: make(chan struct{})}
	j := Open(ctx, store, Options{ConnectionID: "conn_1"})
	defer j.Close()
	j.OnFrame(acp.Inbound, []byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}`))
	answered := answer(j, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess_1"}}`)
	select {
	case <-answered:
		t.Fatal("session/new was answered before the connection's record")
	case <-time.After(100 * time.Millisecond):
	}
	close(store.hold)
	<-answered
	evs, err := real.Events(ctx, "sess_1", persistence.EventFilter{})
	if err != nil || len(evs) == 0 {
		t.Fatalf("%d events of the session committed with its answer, %v", len(evs), err)
	}
}
