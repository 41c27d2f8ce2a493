package persistencetest

import (
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/crow-acp/crow-acp/migrations"
	"github.com/crow-acp/crow-acp/persistence"
)

// Migration 0008 rebuilds the event log with streams and connections named
// by number. StreamNumbersV7 is what a backend's test writes, with its own
// SQL, into a database at schema version 7 (0.1.0) (streams and connections named
// by their ids): the session OldSession (its sessions row too), its
// connection's stream, and the event counter at OldLastID, above the
// largest id kept (pruning deleted the newest frames).
type OldEvent struct {
	ID, Seq, Turn           int64
	Stream, Conn            string
	Dir, Kind, Method, Body string
	At                      time.Time
}

// OldStream is an event_streams row at version 7 (0.1.0).
type OldStream struct {
	Stream        string
	LastSeq, Turn int64
}

const (
	OldSession = "sess_old"
	oldConn    = "conn_old"
	// oldStray is a connection events name that has no stream of its own.
	oldStray  = "conn_stray"
	OldLastID = 40
)

var oldAt = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// StreamNumbersV7 are the version-7 rows.
var StreamNumbersV7 = struct {
	Streams []OldStream
	Events  []OldEvent
}{
	Streams: []OldStream{{oldConn, 2, 0}, {OldSession, 5, 2}},
	Events: []OldEvent{
		{ID: 3, Seq: 1, Stream: oldConn, Conn: oldConn, Dir: "in", Kind: "request", Method: "initialize", Body: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`},
		{ID: 4, Seq: 2, Stream: oldConn, Conn: oldConn, Dir: "out", Kind: "response", Method: "initialize", Body: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{ID: 5, Seq: 1, Stream: OldSession, Conn: oldConn, Kind: "session_created", Body: `{"connectionId":"conn_old"}`},
		{ID: 7, Seq: 2, Turn: 1, Stream: OldSession, Conn: oldConn, Kind: "turn_started", Body: `{"requestId":3}`},
		{ID: 9, Seq: 3, Turn: 1, Stream: OldSession, Conn: oldConn, Dir: "in", Kind: "request", Method: "session/prompt", Body: `{"jsonrpc":"2.0","id":3}`},
		{ID: 12, Seq: 4, Turn: 2, Stream: OldSession, Conn: oldStray, Kind: "turn_started", Body: `{"requestId":4}`},
		{ID: 13, Seq: 5, Turn: 2, Stream: OldSession, Kind: "session_closed", Body: `{}`},
	},
}

func init() {
	for i := range StreamNumbersV7.Events {
		StreamNumbersV7.Events[i].At = oldAt.Add(time.Duration(i) * time.Second)
	}
}

// V7SQL is a backend's SQL for the rows of StreamNumbersV7: a session by
// its id; a stream by name, last seq and turn; an event by id, stream, seq,
// connection, at (At, converted by the backend's function), direction,
// turn, kind, method and body; the event counter.
type V7SQL struct {
	Session, Stream, Event, Counter string
	At                              func(time.Time) any
}

// WriteStreamNumbersV7 writes the rows of StreamNumbersV7 through exec.
func WriteStreamNumbersV7(t *testing.T, exec func(q string, args ...any) error, q V7SQL) {
	t.Helper()
	must := func(sql string, args ...any) {
		t.Helper()
		if err := exec(sql, args...); err != nil {
			t.Fatalf("%.50s: %v", sql, err)
		}
	}
	must(q.Session, OldSession)
	for _, st := range StreamNumbersV7.Streams {
		must(q.Stream, st.Stream, st.LastSeq, st.Turn)
	}
	for _, e := range StreamNumbersV7.Events {
		must(q.Event, e.ID, e.Stream, e.Seq, e.Conn, q.At(e.At), e.Dir, e.Turn, e.Kind, e.Method, []byte(e.Body))
	}
	must(q.Counter, OldLastID)
}

// StreamNumbersMigrated checks s, opened (so migrated) on the rows of
// StreamNumbersV7: every event reads back as it was, with its connection's
// id; the seq and turn counters and the id counter carry on; deleting the
// session takes its events and leaves the connection's.
func StreamNumbersMigrated(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	for _, stream := range []string{oldConn, OldSession} {
		got, err := s.Events(ctx, stream, persistence.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var want []OldEvent
		for _, e := range StreamNumbersV7.Events {
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
	if turn, err := s.LastTurn(ctx, OldSession); err != nil || turn != 2 {
		t.Errorf("last turn after the migration: %d (%v), want 2", turn, err)
	}
	next := []*persistence.Event{
		{Stream: OldSession, ConnectionID: "conn_new", Turn: 3, Kind: persistence.EventTurnStarted, Body: []byte(`{}`)},
		{Stream: OldSession, ConnectionID: oldStray, Turn: 3, Kind: persistence.EventTurnCompleted, Body: []byte(`{}`)},
	}
	if err := s.AppendEvents(ctx, next...); err != nil {
		t.Fatal(err)
	}
	if next[0].Seq != 6 || next[1].Seq != 7 || next[0].ID <= OldLastID || next[1].ID != next[0].ID+1 {
		t.Errorf("new events got seqs %d, %d and ids %d, %d; want 6, 7 and ids above %d (none given twice)",
			next[0].Seq, next[1].Seq, next[0].ID, next[1].ID, OldLastID)
	}
	got, err := s.Events(ctx, OldSession, persistence.EventFilter{AfterSeq: 5})
	if err != nil || len(got) != 2 || got[0].ConnectionID != "conn_new" || got[1].ConnectionID != oldStray {
		t.Fatalf("new events read back as %+v (%v)", got, err)
	}
	if err := s.DeleteSession(ctx, OldSession); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Events(ctx, OldSession, persistence.EventFilter{}); err != nil || len(got) != 0 {
		t.Errorf("the deleted session keeps %d events (%v)", len(got), err)
	}
	if got, err := s.Events(ctx, oldConn, persistence.EventFilter{}); err != nil || len(got) != 2 || got[1].ConnectionID != oldConn {
		t.Errorf("the connection's stream after the session's deletion: %+v (%v)", got, err)
	}
}

// MigrationsUpTo is the migrations of dir in fsys up to version last, in
// a directory "m" of their own: a database at an older schema.
func MigrationsUpTo(t *testing.T, fsys fs.FS, dir string, last int) fstest.MapFS {
	t.Helper()
	files, err := migrations.Load(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, f := range files {
		if f.Version <= last {
			out["m/"+f.Name] = &fstest.MapFile{Data: []byte(f.SQL)}
		}
	}
	return out
}
