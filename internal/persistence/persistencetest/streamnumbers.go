package persistencetest

import (
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Migration 0008 rebuilds the event log with streams and connections named
// by number. oldEvents and oldStreams are rows of a database at schema
// version 7 (0.1.0), streams and connections named by their ids: the
// session oldSession (its sessions row too), its connection's stream, and
// the event counter at oldLastID, above the largest id kept (pruning
// deleted the newest frames).
type oldEvent struct {
	ID, Seq, Turn           int64
	Stream, Conn            string
	Dir, Kind, Method, Body string
	At                      time.Time
}

const (
	oldSession = "sess_old"
	oldConn    = "conn_old"
	// oldStray is a connection events name that has no stream of its own.
	oldStray  = "conn_stray"
	oldLastID = 40
)

var oldAt = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// oldStreams are the event_streams rows: stream, last seq, last turn.
var oldStreams = []struct {
	Stream        string
	LastSeq, Turn int64
}{{oldConn, 2, 0}, {oldSession, 5, 2}}

var oldEvents = []oldEvent{
	{ID: 3, Seq: 1, Stream: oldConn, Conn: oldConn, Dir: "in", Kind: "request", Method: "initialize", Body: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`},
	{ID: 4, Seq: 2, Stream: oldConn, Conn: oldConn, Dir: "out", Kind: "response", Method: "initialize", Body: `{"jsonrpc":"2.0","id":1,"result":{}}`},
	{ID: 5, Seq: 1, Stream: oldSession, Conn: oldConn, Kind: "session_created", Body: `{"connectionId":"conn_old"}`},
	{ID: 7, Seq: 2, Turn: 1, Stream: oldSession, Conn: oldConn, Kind: "turn_started", Body: `{"requestId":3}`},
	{ID: 9, Seq: 3, Turn: 1, Stream: oldSession, Conn: oldConn, Dir: "in", Kind: "request", Method: "session/prompt", Body: `{"jsonrpc":"2.0","id":3}`},
	{ID: 12, Seq: 4, Turn: 2, Stream: oldSession, Conn: oldStray, Kind: "turn_started", Body: `{"requestId":4}`},
	{ID: 13, Seq: 5, Turn: 2, Stream: oldSession, Kind: "session_closed", Body: `{}`},
}

func init() {
	for i := range oldEvents {
		oldEvents[i].At = oldAt.Add(time.Duration(i) * time.Second)
	}
}

// testMigrateStreamNumbers: migration 0008 rebuilds a 0.1.0 (version 7)
// event log (streams and connections named by text) with them named by
// number, and nothing is lost.
func testMigrateStreamNumbers(t *testing.T, b Backend) {
	db := b.at(t, 7)
	q := b.V7
	db.mustExec(t, `INSERT INTO sessions (id, created_at, updated_at) VALUES (?, ?, ?)`, oldSession, q.At(oldAt), q.At(oldAt))
	for _, st := range oldStreams {
		db.mustExec(t, `INSERT INTO event_streams (stream, last_seq, last_turn) VALUES (?, ?, ?)`, st.Stream, st.LastSeq, st.Turn)
	}
	for _, e := range oldEvents {
		db.mustExec(t, q.Event, e.ID, e.Stream, e.Seq, e.Conn, q.At(e.At), e.Dir, e.Turn, e.Kind, e.Method, []byte(e.Body))
	}
	db.mustExec(t, q.Counter, oldLastID)
	streamNumbersMigrated(t, b.open(t))
}

// streamNumbersMigrated checks s, opened (so migrated) on the rows of
// oldEvents: every event reads back as it was, with its connection's
// id; the seq and turn counters and the id counter carry on; deleting the
// session takes its events and leaves the connection's.
func streamNumbersMigrated(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	for _, stream := range []string{oldConn, oldSession} {
		got := mustEvents(t, s, stream)
		var want []oldEvent
		for _, e := range oldEvents {
			if e.Stream == stream {
				want = append(want, e)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("stream %s: %d events after the migration, want %d", stream, len(got), len(want))
		}
		for i, g := range got {
			w := want[i]
			if g.ID != w.ID || g.Seq != w.Seq || g.Turn != w.Turn || g.Stream != stream || g.ConnectionID != w.Conn ||
				string(g.Direction) != w.Dir || string(g.Kind) != w.Kind || g.Method != w.Method || string(g.Body) != w.Body || !g.At.Equal(w.At) {
				t.Errorf("stream %s event %d after the migration:\n got %+v\nwant %+v", stream, i, g, w)
			}
		}
	}
	if turn, err := s.LastTurn(ctx, oldSession); err != nil || turn != 2 {
		t.Errorf("last turn after the migration: %d (%v), want 2", turn, err)
	}
	next := []*persistence.Event{
		{Stream: oldSession, ConnectionID: "conn_new", Turn: 3, Kind: persistence.EventTurnStarted, Body: []byte(`{}`)},
		{Stream: oldSession, ConnectionID: oldStray, Turn: 3, Kind: persistence.EventTurnCompleted, Body: []byte(`{}`)},
	}
	must(t, s.AppendEvents(ctx, next...))
	if next[0].Seq != 6 || next[1].Seq != 7 || next[0].ID <= oldLastID || next[1].ID != next[0].ID+1 {
		t.Errorf("new events got seqs %d, %d and ids %d, %d; want 6, 7 and ids above %d (none given twice)",
			next[0].Seq, next[1].Seq, next[0].ID, next[1].ID, oldLastID)
	}
	got, err := s.Events(ctx, oldSession, persistence.EventFilter{AfterSeq: 5})
	if err != nil || len(got) != 2 || got[0].ConnectionID != "conn_new" || got[1].ConnectionID != oldStray {
		t.Fatalf("new events read back as %+v (%v)", got, err)
	}
	must(t, s.DeleteSession(ctx, oldSession))
	if got, err := s.Events(ctx, oldSession, persistence.EventFilter{}); err != nil || len(got) != 0 {
		t.Errorf("the deleted session keeps %d events (%v)", len(got), err)
	}
	if got, err := s.Events(ctx, oldConn, persistence.EventFilter{}); err != nil || len(got) != 2 || got[1].ConnectionID != oldConn {
		t.Errorf("the connection's stream after the session's deletion: %+v (%v)", got, err)
	}
}
