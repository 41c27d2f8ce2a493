package persistencetest

import (
	"encoding/json"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
)

// eventBytesTests pin what the projection events cost: the event log must
// not hold a session's text many times over.
var eventBytesTests = []storeTest{
	{"ChangeRecordsPatches", testChangeRecordsPatches},
	{"UpdateRecordsAppended", testUpdateRecordsAppended},
	{"ImportedThenAppended", testImportedThenAppended},
}

// mustRecord decodes the record of a lifecycle or projection event into v.
func mustRecord(t *testing.T, e *persistence.Event, v any) {
	t.Helper()
	if err := json.Unmarshal(e.Body, v); err != nil {
		t.Fatalf("event %d (%s): %v: %.200q", e.Seq, e.Kind, err, e.Body)
	}
}

// lastEvent is the session's last event, which must be of kind k.
func lastEvent(t *testing.T, s persistence.Store, sessionID string, k persistence.EventKind) persistence.Event {
	t.Helper()
	evs := mustEvents(t, s, sessionID)
	if len(evs) == 0 || evs[len(evs)-1].Kind != k {
		t.Fatalf("%d events, the last not a %s", len(evs), k)
	}
	return evs[len(evs)-1]
}

// testChangeRecordsPatches: a compaction operation records the compaction
// state of the rows it touches, not their text: O(rows) bytes, however
// long the messages; every operation still rebuilds exactly.
func testChangeRecordsPatches(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "patch"})
	const n, size = 100, 2000
	var ids []int64
	for i := range n {
		m := userMsg(Prose(uint64(i), size))
		mustAppend(t, s, "patch", m)
		ids = append(ids, m.ID)
	}
	c := &persistence.Compaction{SessionID: "patch", Policy: "summarise", CompactedIDs: ids}
	mustCompact(t, s, c, &persistence.Message{Role: persistence.RoleSummary, Content: "sum"})
	ops := []struct {
		name string
		do   func() error
	}{
		{"compact", func() error { return nil }},
		{"expand", func() error { return s.ExpandCompaction(ctx, "patch", c.ID) }},
		{"collapse", func() error { return s.CollapseCompaction(ctx, "patch", c.ID) }},
		{"expand again", func() error { return s.ExpandCompaction(ctx, "patch", c.ID) }},
		{"delete", func() error { return s.DeleteCompaction(ctx, "patch", c.ID) }},
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		e := lastEvent(t, s, "patch", persistence.EventMessagesChanged)
		// An id, its comma and the record's envelope: far below one
		// message's text, let alone n of them.
		if limit := 16*n + 1024; len(e.Body) > limit {
			t.Errorf("%s of %d messages of %d bytes: record of %d bytes; want <= %d", op.name, n, size, len(e.Body), limit)
		}
		verifyOK(t, s, "patch", "after "+op.name)
	}
}

// testUpdateRecordsAppended: a reply saved as it grows records each time
// only what it appended, so its text is recorded about once, not once a
// save; an update that rewrites the text, or text that is not valid UTF-8,
// records the whole value; every state rebuilds exactly, on every store
// (NUL, which PostgreSQL keeps as U+FFFD; a character cut between two
// saves; a reply interrupted, then growing again).
func testUpdateRecordsAppended(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "grow"})
	reply := &persistence.Message{Role: persistence.RoleAssistant, Status: persistence.StatusStreaming}
	mustAppend(t, s, "grow", reply)
	const saves = 50
	text := Prose(3, 4000)
	recorded := 0
	for i := 1; i <= saves; i++ {
		reply.Content = text[:len(text)*i/saves]
		reply.Reasoning = text[:len(text)*i/saves/4]
		must(t, s.UpdateMessage(ctx, reply))
		recorded += len(lastEvent(t, s, "grow", persistence.EventMessageUpdated).Body)
	}
	// The text and a quarter of it for the reasoning, once, and each
	// record's envelope (~250 bytes).
	if limit := len(text)*5/4 + saves*300; recorded > limit {
		t.Errorf("a reply of %d bytes saved %d times recorded %d bytes, want <= %d", len(text), saves, recorded, limit)
	}
	verifyOK(t, s, "grow", "after a growing reply")

	for _, c := range []struct{ what, content string }{
		{"a rewrite", "something else entirely"},
		{"text with a stray byte", "something else \xff entirely"},
		{"more after a stray byte", "something else \xff entirely, and more"},
		// NUL is valid UTF-8 that PostgreSQL's text keeps as U+FFFD: the
		// appended part is measured on the text as stored.
		{"a NUL", "something else \x00"},
		{"more after a NUL", "something else \x00 and more"},
		{"a character cut in two", "something else \x00 and more \xe2\x82"},
		{"the character completed", "something else \x00 and more \xe2\x82\xac"},
		{"a shorter text", "some"},
		{"an empty text", ""},
		{"text again", "text again"},
	} {
		reply.Content, reply.Status = c.content, persistence.StatusComplete
		must(t, s.UpdateMessage(ctx, reply))
		verifyOK(t, s, "grow", "after "+c.what)
	}
	if _, err := s.InterruptStreaming(ctx, "grow"); err != nil {
		t.Fatal(err)
	}
	verifyOK(t, s, "grow", "after InterruptStreaming")
	// A reply interrupted, then saved again as it goes on growing.
	for _, more := range []string{" resumed", " and done"} {
		reply.Content += more
		must(t, s.UpdateMessage(ctx, reply))
		verifyOK(t, s, "grow", "after the interrupted reply grew by "+more)
	}
}

// verifyOK checks the session's tables equal its rebuild from events.
func verifyOK(t *testing.T, s persistence.Store, sessionID, when string) {
	t.Helper()
	r, err := projection.Verify(t.Context(), s, sessionID)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if !r.OK() {
		t.Fatalf("%s: %q", when, r.Differences)
	}
}

// testImportedThenAppended: a session imported (crow-acp migrate) with a
// reply cut by a crash, whose text holds a NUL (a model may stream one),
// is repaired and then grows on the destination: the import's record
// holds the text as the store keeps it, so the update records that append
// to it rebuild (PostgreSQL keeps a NUL as U+FFFD, three bytes).
func testImportedThenAppended(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	d := &persistence.SessionDump{
		Session: persistence.Session{ID: "imported", CreatedAt: base, UpdatedAt: base},
		Messages: []persistence.Message{
			{Seq: 1, Role: persistence.RoleUser, Content: "a question \x00", Status: persistence.StatusComplete, IsActive: true, CreatedAt: base},
			{Seq: 2, Role: persistence.RoleAssistant, Content: "a reply \x00 cut", Reasoning: "thought \x00",
				Status: persistence.StatusStreaming, IsActive: true, CreatedAt: base},
		},
	}
	must(t, s.ImportSession(ctx, d))
	verifyOK(t, s, "imported", "after the import")
	if _, err := s.InterruptStreaming(ctx, "imported"); err != nil {
		t.Fatal(err)
	}
	verifyOK(t, s, "imported", "after InterruptStreaming")
	msgs := mustMessages(t, s, "imported", persistence.MessageFilter{})
	reply := &msgs[1]
	reply.Content += " and continued"
	reply.Reasoning += " further"
	must(t, s.UpdateMessage(ctx, reply))
	verifyOK(t, s, "imported", "after the imported reply grew")
}
