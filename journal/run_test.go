package journal

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
)

// A streamed reply's session/update frames are stored as one event, one
// frame per line, in order; anything else between them, a new turn, a
// commit or the size cap starts a new event; every frame is kept.
func TestStreamedUpdatesShareAnEvent(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "crow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.CreateSession(ctx, &persistence.Session{ID: "sess_a", Cwd: "/tmp"}); err != nil {
		t.Fatal(err)
	}
	j, err := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	frame := func(dir acp.Direction, s string) {
		j.OnFrame(dir, []byte(s))
		sent = append(sent, []byte(s))
	}
	update := func(text string) {
		frame(acp.Outbound, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`+text+`"}}}}`)
	}
	prompt := func(id int) {
		frame(acp.Inbound, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess_a","prompt":[]}}`, id))
	}
	answer := func(id int) {
		frame(acp.Outbound, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, id))
	}

	prompt(1)
	for i := range 5 {
		update(fmt.Sprintf("a%d", i)) // one event of 5
	}
	frame(acp.Inbound, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_a"}}`)
	update("b0") // after an inbound frame: a new event
	update("b1")
	j.Flush(ctx)
	update("c0") // after a commit: a new event
	big := strings.Repeat("x", maxRunBody/2)
	update(big) // joins c0
	update(big) // over the cap: a new event
	answer(1)   // commits
	prompt(2)
	update("d0") // a new turn: a new event
	answer(2)
	j.Close()

	evs, err := store.Events(ctx, "sess_a", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	var runs []int
	for _, e := range evs {
		fs := e.Frames()
		got = append(got, fs...)
		if e.Method == "session/update" {
			runs = append(runs, len(fs))
			if !bytes.Equal(e.Body, bytes.Join(fs, []byte("\n"))) {
				t.Errorf("event %d: body is not its frames joined", e.Seq)
			}
		} else if len(fs) > 1 {
			t.Errorf("event %d (%s %s) holds %d frames", e.Seq, e.Kind, e.Method, len(fs))
		}
	}
	if fmt.Sprint(runs) != "[5 2 2 1 1]" {
		t.Errorf("session/update events hold %v frames, want [5 2 2 1 1]", runs)
	}
	if len(got) != len(sent) {
		t.Fatalf("%d frames stored, %d sent", len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("frame %d: stored %.80q, sent %.80q", i, got[i], sent[i])
		}
	}
}
