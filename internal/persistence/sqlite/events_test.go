package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestAppendEventsChunks appends batches whose sizes fall around the chunk
// lengths (1, 2, 3, 63, 64, 65, 2*64+3, ...) and whose runs of shared
// columns break in every way (each shared column in turn, and two streams
// interleaved), and checks every event's ID, Seq and At against the row
// stored under that ID, column by column.
func TestAppendEventsChunks(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	ctx := t.Context()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// change alters event i of a batch, to break the runs of shared columns.
	type variant struct {
		name   string
		change func(e *persistence.Event, i int)
	}
	variants := []variant{
		{"uniform", func(*persistence.Event, int) {}},
		{"two streams in blocks", func(e *persistence.Event, i int) {
			if i/10%2 == 1 {
				e.Stream = "b"
			}
		}},
		{"two streams alternating", func(e *persistence.Event, i int) {
			if i%2 == 1 {
				e.Stream = "b"
			}
		}},
		{"connection", func(e *persistence.Event, i int) {
			if i%7 == 3 {
				e.ConnectionID = "conn-2"
			}
		}},
		{"direction", func(e *persistence.Event, i int) {
			if i%5 == 4 {
				e.Direction = persistence.DirIn
			}
		}},
		{"turn", func(e *persistence.Event, i int) { e.Turn = int64(i / 9) }},
		{"kind", func(e *persistence.Event, i int) {
			if i == 64 || i == 65 {
				e.Kind = persistence.EventRequest
			}
		}},
		{"method", func(e *persistence.Event, i int) {
			if i%11 == 0 {
				e.Method = "session/prompt"
			}
		}},
	}
	sizes := []int{1, 2, 3, 7, 8, 9, 63, 64, 65, 2*64 + 3, 200}

	n := 0 // events appended so far, for distinct bodies
	for _, v := range variants {
		for _, size := range sizes {
			evs := make([]*persistence.Event, size)
			for i := range evs {
				e := &persistence.Event{
					Stream: "a", ConnectionID: "conn-1", Direction: persistence.DirOut, Turn: 1,
					Kind: persistence.EventNotification, Method: "session/update",
					Body: fmt.Appendf(nil, `{"n":%d}`, n),
				}
				if i%3 == 0 {
					e.At = base.Add(time.Duration(n)) // the rest take the store's clock
				}
				v.change(e, i)
				evs[i] = e
				n++
			}
			if err := s.AppendEvents(ctx, evs...); err != nil {
				t.Fatalf("%s, %d events: %v", v.name, size, err)
			}
			checkStored(t, s, fmt.Sprintf("%s, %d events", v.name, size), evs)
		}
	}

	// Ids stay right after the newest rows are deleted: AUTOINCREMENT never
	// hands their ids out again.
	if _, err := s.db.ExecContext(ctx, `DELETE FROM events WHERE id > (SELECT MAX(id) - 5 FROM events)`); err != nil {
		t.Fatal(err)
	}
	evs := make([]*persistence.Event, 70)
	for i := range evs {
		evs[i] = &persistence.Event{Stream: "a", Kind: persistence.EventNotification, Body: fmt.Appendf(nil, `{"n":%d}`, n)}
		n++
	}
	must(t, s.AppendEvents(ctx, evs...))
	checkStored(t, s, "after a delete", evs)
}

// checkStored compares evs, as AppendEvents filled them, with the stored
// rows: ids increase by one in batch order, seqs by one per stream.
func checkStored(t *testing.T, s *openStore, what string, evs []*persistence.Event) {
	t.Helper()
	stored := make(map[int64]persistence.Event)
	streams := make(map[string]bool)
	for _, e := range evs {
		streams[e.Stream] = true
	}
	for stream := range streams {
		got, err := s.Events(t.Context(), stream, persistence.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			stored[e.ID] = e
		}
	}
	lastSeq := make(map[string]int64)
	for i, e := range evs {
		if i > 0 && e.ID != evs[i-1].ID+1 {
			t.Fatalf("%s: event %d has id %d after %d", what, i, e.ID, evs[i-1].ID)
		}
		if last, ok := lastSeq[e.Stream]; ok && e.Seq != last+1 {
			t.Fatalf("%s: event %d has seq %d after %d", what, i, e.Seq, last)
		}
		lastSeq[e.Stream] = e.Seq
		got, ok := stored[e.ID]
		if !ok {
			t.Fatalf("%s: event %d: no row with id %d", what, i, e.ID)
		}
		if got.Stream != e.Stream || got.Seq != e.Seq || got.ConnectionID != e.ConnectionID ||
			!got.At.Equal(e.At) || got.Direction != e.Direction || got.Turn != e.Turn ||
			got.Kind != e.Kind || got.Method != e.Method || string(got.Body) != string(e.Body) {
			t.Fatalf("%s: event %d:\n stored %+v\n filled %+v", what, i, got, *e)
		}
	}
}

// TestAppendEventsRollbackMidBatch: a batch whose third chunk fails leaves
// no row, no reserved seq and no filled event behind.
func TestAppendEventsRollbackMidBatch(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	ctx := t.Context()
	mk := func(n int) []*persistence.Event {
		evs := make([]*persistence.Event, n)
		for i := range evs {
			evs[i] = &persistence.Event{Stream: "s", Kind: persistence.EventNotification, Turn: 2, Body: []byte(`{}`)}
		}
		return evs
	}
	// Take seq 99 behind the store's back: a batch of 100 inserts 1-64,
	// 65-96, then fails in 97-100.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO event_streams (stream) VALUES ('s');
		INSERT INTO events (stream_id, seq, at, kind, body) SELECT id, 99, 0, 'x', x'' FROM event_streams WHERE stream = 's'`); err != nil {
		t.Fatal(err)
	}
	evs := mk(100)
	if err := s.AppendEvents(ctx, evs...); err == nil {
		t.Fatal("a batch with a duplicate seq was accepted")
	}
	for i, e := range evs {
		if e.ID != 0 || e.Seq != 0 || !e.At.IsZero() {
			t.Fatalf("event %d of the failed batch was filled: %+v", i, e)
		}
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d rows after the failed batch (%v), want 1", rows, err)
	}
	if turn, err := s.LastTurn(ctx, "s"); err != nil || turn != 0 {
		t.Fatalf("last turn %d (%v) after the failed batch: its reservation was kept", turn, err)
	}

	if _, err := s.db.ExecContext(ctx, `DELETE FROM events`); err != nil {
		t.Fatal(err)
	}
	evs = mk(100)
	must(t, s.AppendEvents(ctx, evs...))
	if evs[0].Seq != 1 {
		t.Errorf("first seq after the failed batch = %d, want 1 (none was used up)", evs[0].Seq)
	}
	checkStored(t, s, "after the failed batch", evs)
}
