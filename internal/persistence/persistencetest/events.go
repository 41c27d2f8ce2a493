package persistencetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// eventTests are the FrameLog and MessageUpdater contract.
var eventTests = []storeTest{
	{"EventsAppendOrder", testEventsAppendOrder},
	{"EventsByteExact", testEventsByteExact},
	{"EventsProjection", testEventsProjection},
	{"EventsRunPacked", testEventsRunPacked},
	{"EventsPrune", testEventsPrune},
	{"UpdateMessage", testUpdateMessage},
	{"InterruptStreaming", testInterruptStreaming},
}

func testEventsAppendOrder(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	must(t, s.CreateConnection(ctx, &persistence.Connection{ID: "conn_1", PID: 42, Host: "h"}))
	checkErr(t, "duplicate connection", s.CreateConnection(ctx, &persistence.Connection{ID: "conn_1"}), persistence.ErrConflict)
	mk := func(stream string, turn int64) *persistence.Event {
		return &persistence.Event{Stream: stream, ConnectionID: "conn_1", Direction: persistence.DirIn,
			Turn: turn, Kind: persistence.EventNotification, Method: "m", Body: []byte(`{}`)}
	}
	batch := []*persistence.Event{mk("a", 1), mk("b", 0), mk("a", 2), mk("a", 2)}
	must(t, s.AppendEvents(ctx, batch...))
	must(t, s.AppendEvents(ctx, mk("b", 0), mk("a", 1)))
	a := mustEvents(t, s, "a")
	if len(a) != 4 {
		t.Fatalf("%d events on a, want 4", len(a))
	}
	for i, e := range a {
		if e.Seq != int64(i+1) || e.Stream != "a" || e.ConnectionID != "conn_1" || e.Kind != persistence.EventNotification {
			t.Errorf("event %d = %+v", i, e)
		}
		if e.At.IsZero() || time.Since(e.At) > time.Minute {
			t.Errorf("event %d: At %v not set by the store", i, e.At)
		}
	}
	if batch[2].Seq != 2 || batch[1].Seq != 1 || batch[2].ID == 0 {
		t.Errorf("seqs/ids not filled: %+v", batch)
	}
	if turn, err := s.LastTurn(ctx, "a"); err != nil || turn != 2 {
		t.Errorf("LastTurn(a) = %d, %v; want 2", turn, err)
	}
	if turn, err := s.LastTurn(ctx, "nope"); err != nil || turn != 0 {
		t.Errorf("LastTurn(nope) = %d, %v; want 0", turn, err)
	}
	page, err := s.Events(ctx, "a", persistence.EventFilter{AfterSeq: 1, Limit: 2})
	if err != nil || len(page) != 2 || page[0].Seq != 2 || page[1].Seq != 3 {
		t.Errorf("AfterSeq 1, Limit 2: %+v, %v", page, err)
	}
	if none, err := s.Events(ctx, "nope", persistence.EventFilter{}); err != nil || len(none) != 0 {
		t.Errorf("unknown stream: %d events, %v", len(none), err)
	}
	if err := s.AppendEvents(ctx, mk("a", 0), &persistence.Event{Stream: "a"}); err == nil {
		t.Error("an event without a kind was accepted")
	}
	if after, _ := s.Events(ctx, "a", persistence.EventFilter{}); len(after) != 4 {
		t.Errorf("a failed batch left %d events, want 4", len(after))
	}
}

// testEventsByteExact: frames come back byte for byte, including what a
// JSON round trip would change and lines that are not JSON at all.
func testEventsByteExact(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	bodies := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":"x-1","method":"_vendor/thing","params":{"_meta":{"a":[1,2.50,1e3]},"unknown":null}}`),
		[]byte(`{"jsonrpc":"2.0","id":1.0e0,  "result":{"z":1,"a":2}}`),
		[]byte("{not json \xff\x00"),
		{},
	}
	var evs []*persistence.Event
	for _, b := range bodies {
		evs = append(evs, &persistence.Event{Stream: "conn_x", Direction: persistence.DirOut, Kind: persistence.EventInvalid, Body: b})
	}
	must(t, s.AppendEvents(ctx, evs...))
	got, err := s.Events(ctx, "conn_x", persistence.EventFilter{})
	if err != nil || len(got) != len(bodies) {
		t.Fatalf("%d events, %v", len(got), err)
	}
	for i, e := range got {
		if !bytes.Equal(e.Body, bodies[i]) {
			t.Errorf("body %d = %q, want %q", i, e.Body, bodies[i])
		}
		if e.Direction != persistence.DirOut {
			t.Errorf("direction %q", e.Direction)
		}
	}
}

// testEventsProjection: every change to the messages and compactions tables
// is recorded in the same transaction, with the origin the write was made
// with (Recorder.WithOrigin), after the origin's pending events; a record
// is stored as its JSON, a long message's too (it reads in sqlite3 or psql
// as it is).
func testEventsProjection(t *testing.T, base persistence.Store) {
	rec, ok := base.(persistence.Recorder)
	if !ok {
		t.Fatalf("%T is not a persistence.Recorder: its writes cannot be attributed", base)
	}
	mustCreate(t, base, &persistence.Session{ID: "p"})
	frame := &persistence.Event{Stream: "p", ConnectionID: "conn_p", Direction: persistence.DirIn, Turn: 7,
		Kind: persistence.EventRequest, Method: "session/prompt", Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt"}`)}
	first := rec.WithOrigin(persistence.Origin{ConnectionID: "conn_p", Turn: 7, Pending: []*persistence.Event{frame}})
	s := rec.WithOrigin(persistence.Origin{ConnectionID: "conn_p", Turn: 7})
	u := userMsg("hello")
	u.Parts = []persistence.Part{{Type: "text", Text: "hello"}}
	a := &persistence.Message{Role: persistence.RoleAssistant, Content: Prose(7, 4000), Status: persistence.StatusComplete,
		ToolCalls: []persistence.ToolCall{{ID: "c1", Name: "read", Arguments: `{"p":1}`}}, Meta: json.RawMessage(`{"k":"v"}`)}
	mustAppend(t, first, "p", u, a)
	c := &persistence.Compaction{SessionID: "p", Policy: "summarise", CompactedIDs: []int64{u.ID}}
	sum := &persistence.Message{Role: persistence.RoleSummary, Content: "sum"}
	mustCompact(t, s, c, sum)
	// A write through the store itself has no origin.
	mustAppend(t, base, "p", userMsg("anonymous"))
	evs := mustEvents(t, s, "p")
	// The pending frame went in with the first write, before its events.
	if len(evs) == 0 || evs[0].Kind != persistence.EventRequest || !bytes.Equal(evs[0].Body, frame.Body) {
		t.Fatalf("first event %+v, want the pending frame", evs[0])
	}
	if anon := evs[len(evs)-1]; anon.Kind != persistence.EventMessageAppended || anon.ConnectionID != "" || anon.Turn != 0 {
		t.Errorf("a write without origin was recorded as %q/%d", anon.ConnectionID, anon.Turn)
	}
	evs = evs[1 : len(evs)-1]
	kinds := []persistence.EventKind{persistence.EventMessageAppended, persistence.EventMessageAppended, persistence.EventMessagesChanged}
	if len(evs) != len(kinds) {
		t.Fatalf("%d events, want %d", len(evs), len(kinds))
	}
	for i, e := range evs {
		if e.Kind != kinds[i] || e.Direction != "" {
			t.Errorf("event %d: kind %q direction %q, want %q", i, e.Kind, e.Direction, kinds[i])
		}
		if e.ConnectionID != "conn_p" || e.Turn != 7 {
			t.Errorf("event %d: source %q/%d, want conn_p/7", i, e.ConnectionID, e.Turn)
		}
	}
	for i, want := range []*persistence.Message{u, a} {
		var rec persistence.MessageRecord
		mustRecord(t, &evs[i], &rec)
		checkMessage(t, "recorded message", *want, rec.Message("p"))
	}
	var cr persistence.ChangeRecord
	mustRecord(t, &evs[2], &cr)
	if cr.Compaction == nil || cr.Compaction.ID != c.ID || len(cr.Messages) != 1 || cr.Messages[0].ID != sum.ID || !cr.Messages[0].IsActive ||
		len(cr.Patches) != 1 || !slices.Equal(cr.Patches[0].IDs, []int64{u.ID}) || cr.Patches[0].IsActive ||
		cr.Patches[0].CompactedIntoID == nil || *cr.Patches[0].CompactedIntoID != c.ID {
		t.Errorf("change record %+v, want compaction %d, summary %d added and %d patched inactive", cr, c.ID, sum.ID, u.ID)
	}
}

func testEventsPrune(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "q"})
	old := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Microsecond)
	if err := s.AppendEvents(ctx,
		&persistence.Event{Stream: "q", At: old, Direction: persistence.DirIn, Kind: persistence.EventRequest, Body: []byte(`{}`)},
		&persistence.Event{Stream: "q", At: old, Kind: persistence.EventTurnStarted, Body: []byte(`{}`)},
		&persistence.Event{Stream: "q", Direction: persistence.DirOut, Kind: persistence.EventResponse, Body: []byte(`{}`)},
	); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "q", userMsg("kept"))
	n, err := s.PruneEvents(ctx, time.Now().Add(-time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PruneEvents = %d, %v; want 1", n, err)
	}
	evs, _ := s.Events(ctx, "q", persistence.EventFilter{})
	if len(evs) != 3 || evs[0].Seq != 2 || evs[0].Kind != persistence.EventTurnStarted {
		t.Fatalf("after prune: %+v", evs)
	}
	e := &persistence.Event{Stream: "q", Kind: persistence.EventTurnCompleted, Body: []byte(`{}`)}
	if err := s.AppendEvents(ctx, e); err != nil || e.Seq != 5 {
		t.Errorf("seq after prune = %d, %v; want 5 (never reused)", e.Seq, err)
	}
}

func testUpdateMessage(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "u"})
	m := &persistence.Message{Role: persistence.RoleAssistant, Status: persistence.StatusStreaming}
	mustAppend(t, s, "u", m)
	before := mustGet(t, s, "u").UpdatedAt
	m.Content, m.Reasoning, m.Status = "partial reply", "thought", persistence.StatusComplete
	m.ToolCalls = []persistence.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}
	m.Meta, m.TokenCount = json.RawMessage(`{"x":1}`), 12
	must(t, s.UpdateMessage(ctx, m))
	got := mustMessages(t, s, "u", persistence.MessageFilter{})
	if len(got) != 1 {
		t.Fatalf("%d messages", len(got))
	}
	checkMessage(t, "updated", *m, got[0])
	if after := mustGet(t, s, "u").UpdatedAt; !after.After(before) {
		t.Errorf("UpdatedAt %v not after %v", after, before)
	}
	evs, _ := s.Events(ctx, "u", persistence.EventFilter{})
	if len(evs) != 2 || evs[1].Kind != persistence.EventMessageUpdated {
		t.Fatalf("events %+v, want appended then updated", evs)
	}
	verifyOK(t, s, "u", "after the update")
	for _, bad := range []*persistence.Message{
		{ID: m.ID + 100, SessionID: "u"},
		{ID: m.ID, SessionID: "other"},
	} {
		if err := s.UpdateMessage(ctx, bad); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("UpdateMessage(%d, %q) = %v, want ErrNotFound", bad.ID, bad.SessionID, err)
		}
	}
	if evs, _ := s.Events(ctx, "u", persistence.EventFilter{}); len(evs) != 2 {
		t.Errorf("failed updates recorded events: %d", len(evs))
	}
}

func testInterruptStreaming(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "i"})
	streaming := &persistence.Message{Role: persistence.RoleAssistant, Content: "half", Status: persistence.StatusStreaming}
	done := &persistence.Message{Role: persistence.RoleAssistant, Content: "whole", Status: persistence.StatusComplete}
	mustAppend(t, s, "i", done, streaming)
	n, err := s.InterruptStreaming(ctx, "i")
	if err != nil || n != 1 {
		t.Fatalf("InterruptStreaming = %d, %v; want 1", n, err)
	}
	got := mustMessages(t, s, "i", persistence.MessageFilter{})
	if got[0].Status != persistence.StatusComplete || got[1].Status != persistence.StatusInterrupted || got[1].Content != "half" {
		t.Errorf("statuses %q %q (%q)", got[0].Status, got[1].Status, got[1].Content)
	}
	if n, err := s.InterruptStreaming(ctx, "i"); err != nil || n != 0 {
		t.Errorf("second InterruptStreaming = %d, %v; want 0", n, err)
	}
	evs, _ := s.Events(ctx, "i", persistence.EventFilter{})
	if len(evs) != 3 || evs[2].Kind != persistence.EventMessageUpdated {
		t.Errorf("events %+v", evs)
	}
}

// StreamedRun is the session/update frames of text in chunks of four
// characters, as a provider streams a reply, joined into one run.
func StreamedRun(sid, text string) []byte {
	var frames []string
	for i := 0; i < len(text); i += 4 {
		chunk, _ := json.Marshal(text[i:min(i+4, len(text))])
		frames = append(frames, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`+sid+
			`","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":`+string(chunk)+`}}}}`)
	}
	return []byte(strings.Join(frames, "\n"))
}

// testEventsRunPacked: a streamed run is stored packed whether it goes in
// with a write's record (pending) or alone, smaller than the text it
// streams, and reads back byte for byte, on its own; a frame of another
// stream in the same write too.
func testEventsRunPacked(t *testing.T, base persistence.Store) {
	ctx := t.Context()
	rec := base.(persistence.Recorder)
	mustCreate(t, base, &persistence.Session{ID: "r"})
	text := Prose(1, 8000)
	run := func(stream, text string) *persistence.Event {
		return &persistence.Event{Stream: stream, ConnectionID: "conn_r", Direction: persistence.DirOut, Turn: 1,
			Kind: persistence.EventNotification, Method: "session/update", Body: StreamedRun("r", text)}
	}
	first, second, other := run("r", text[:4000]), run("r", text[4000:]), run("conn_r", text[:2000])
	m := &persistence.Message{Role: persistence.RoleAssistant, Content: text[:4000], Status: persistence.StatusStreaming}
	w := rec.WithOrigin(persistence.Origin{ConnectionID: "conn_r", Turn: 1, Pending: []*persistence.Event{first, other}})
	mustAppend(t, w, "r", m)
	m.Content, m.Status = text, persistence.StatusComplete
	w = rec.WithOrigin(persistence.Origin{ConnectionID: "conn_r", Turn: 1, Pending: []*persistence.Event{second}})
	must(t, w.UpdateMessage(ctx, m))
	lone := run("r", text[:3000])
	must(t, base.AppendEvents(ctx, lone))
	evs := mustEvents(t, base, "r")
	kinds := []persistence.EventKind{persistence.EventNotification, persistence.EventMessageAppended,
		persistence.EventNotification, persistence.EventMessageUpdated, persistence.EventNotification}
	if len(evs) != len(kinds) {
		t.Fatalf("%d events, want %d", len(evs), len(kinds))
	}
	for i, want := range []*persistence.Event{first, nil, second, nil, lone} {
		if evs[i].Kind != kinds[i] {
			t.Fatalf("event %d is %s, want %s", i, evs[i].Kind, kinds[i])
		}
		if want == nil {
			continue
		}
		frames, err := evs[i].Frames(persistence.NewBudget(persistence.MaxDecoded))
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got := bytes.Join(frames, []byte("\n")); !bytes.Equal(got, want.Body) {
			t.Fatalf("event %d reads back %.200q, want %.200q", i, got, want.Body)
		}
		if text := len(want.Body) / 30; len(evs[i].Body) > text {
			t.Errorf("event %d: %d bytes stored for a run of %d (about %d of text): not packed", i, len(evs[i].Body), len(want.Body), text)
		}
	}
	conn, err := base.Events(ctx, "conn_r", persistence.EventFilter{})
	if err != nil || len(conn) != 1 {
		t.Fatalf("connection stream: %d events (%v), want 1", len(conn), err)
	}
	if fs, err := conn[0].Frames(persistence.NewBudget(persistence.MaxDecoded)); err != nil || !bytes.Equal(bytes.Join(fs, []byte("\n")), other.Body) {
		t.Errorf("the other stream's frame in the write does not read back on its own (%v)", err)
	}
}
