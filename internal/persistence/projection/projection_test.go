package projection_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// TestVerify checks that the rebuild of a session made through every kind
// of write (persistencetest.RichSession) equals the tables, then edits the
// tables behind the store's back and checks each edit is reported.
func TestVerify(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "crow.db")
	s, err := sqlite.Open(ctx, path)
	persistencetest.Opened(t, s, err)
	persistencetest.RichSession(t, s, "s")
	r, err := projection.Verify(ctx, s, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Messages != persistencetest.RichSessionMessages {
		t.Fatalf("clean session: %d messages, differences %q", r.Messages, r.Differences)
	}

	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, c := range []struct{ sql, want string }{
		{`UPDATE messages SET content = 'forged' WHERE seq = 2`, "message seq 2: content"},
		{`UPDATE messages SET is_active = 1, compacted_into_id = NULL WHERE seq = 1`, "message seq 1: isActive"},
		{`DELETE FROM messages WHERE seq = 3`, "message seq 3 (tool): in the event log, not in the table"},
		{`INSERT INTO messages (session_id, seq, role, created_at) VALUES ('s', 99, 'user', 0)`, "message seq 99 (user): in the table, not in the event log"},
	} {
		if _, err := raw.ExecContext(ctx, c.sql); err != nil {
			t.Fatal(err)
		}
		r, err := projection.Verify(ctx, s, "s")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(r.Differences, "\n"), c.want) {
			t.Errorf("after %s: differences %q, want %q", c.sql, r.Differences, c.want)
		}
	}
	if _, err := raw.ExecContext(ctx, `UPDATE events SET kind = 'forged' WHERE seq = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("updating an event: %v, want the append-only trigger to refuse", err)
	}
}

// TestVerifyOddText: a tool's binary output (NUL, bytes that are not UTF-8)
// is kept raw by SQLite and as persistence.ValidText by the JSON event
// bodies; that is not a difference.
func TestVerifyOddText(t *testing.T) {
	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "crow.db"))
	persistencetest.Opened(t, s, err)
	must(t, s.CreateSession(ctx, &persistence.Session{ID: "s"}))
	m := &persistence.Message{Role: persistence.RoleTool, Content: "ELF\x00\x01\xfe", ToolCallID: "c\xff", Reasoning: "\xe2\x82"}
	must(t, s.AppendMessages(ctx, "s", m))
	r, err := projection.Verify(ctx, s, "s")
	if err != nil || !r.OK() {
		t.Errorf("Verify = %+v, %v; want no differences", r, err)
	}
}

// TestRebuildOldShapes: events written before patches and packed records
// (every touched row recorded whole in messages_changed, bodies plain JSON)
// still rebuild, mixed with events of the new shapes.
func TestRebuildOldShapes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(id, seq int64, role persistence.Role, content string, active bool, into *int64) persistence.MessageRecord {
		return persistence.MessageRecord{ID: id, Seq: seq, Role: role, Content: content, Status: persistence.StatusComplete,
			CreatedAt: at, IsActive: active, CompactedIntoID: into}
	}
	one, two := int64(1), int64(2)
	long := strings.Repeat("a long reply that is packed. ", 40)
	var evs []persistence.Event
	add := func(k persistence.EventKind, b []byte) {
		evs = append(evs, persistence.Event{Seq: int64(len(evs) + 1), Kind: k, Body: b})
	}
	// Old shapes: plain bodies, whole rows in the change record.
	add(persistence.EventMessageAppended, body(t, rec(10, 1, persistence.RoleUser, "q", true, nil)))
	add(persistence.EventMessageAppended, body(t, rec(11, 2, persistence.RoleAssistant, "", true, nil)))
	add(persistence.EventMessageUpdated, body(t, rec(11, 2, persistence.RoleAssistant, "an answer", true, nil)))
	add(persistence.EventMessagesChanged, body(t, persistence.ChangeRecord{
		Messages: []persistence.MessageRecord{
			rec(10, 1, persistence.RoleUser, "q", false, &one),
			rec(11, 2, persistence.RoleAssistant, "an answer", false, &one),
			rec(12, 3, persistence.RoleSummary, "sum", true, nil),
		},
		Compaction: &persistence.Compaction{ID: 1, Policy: "summarise", CompactedIDs: []int64{10, 11}, AddedIDs: []int64{12}},
	}))
	// New shapes: a patch.
	add(persistence.EventMessageAppended, body(t, rec(13, 4, persistence.RoleAssistant, long, true, nil)))
	add(persistence.EventMessagesChanged, body(t, persistence.ChangeRecord{
		Patches:    []persistence.MessagePatch{{IDs: []int64{12, 13}, IsActive: false, CompactedIntoID: &two}},
		Messages:   []persistence.MessageRecord{rec(14, 5, persistence.RoleSummary, "sum2", true, nil)},
		Compaction: &persistence.Compaction{ID: 2, Policy: "summarise", CompactedIDs: []int64{12, 13}, AddedIDs: []int64{14}},
	}))
	st, err := projection.Rebuild("s", evs)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id      int64
		content string
		active  bool
		into    int64
	}
	var got []row
	for _, m := range st.Messages {
		r := row{m.ID, m.Content, m.IsActive, 0}
		if m.CompactedIntoID != nil {
			r.into = *m.CompactedIntoID
		}
		got = append(got, r)
	}
	want := []row{{10, "q", false, 1}, {11, "an answer", false, 1}, {12, "sum", false, 2}, {13, long, false, 2}, {14, "sum2", true, 0}}
	if !reflect.DeepEqual(got, want) || len(st.Compactions) != 2 {
		t.Errorf("rebuilt %+v (%d compactions), want %+v", got, len(st.Compactions), want)
	}

	// A patch of a message the log never made is an error, not a row.
	add(persistence.EventMessagesChanged, body(t, persistence.ChangeRecord{Patches: []persistence.MessagePatch{{IDs: []int64{99}}}}))
	if _, err := projection.Rebuild("s", evs); err == nil || !strings.Contains(err.Error(), "unknown message 99") {
		t.Errorf("patch of an unknown message: %v", err)
	}
}

// TestRebuildAppendedUpdates: an update record that appends (contentFrom)
// extends the text the records before it made, and one whose base does not
// match that text is an error, not a wrong message.
func TestRebuildAppendedUpdates(t *testing.T) {
	evs := []persistence.Event{
		{Seq: 1, Kind: persistence.EventMessageAppended, Body: body(t, persistence.MessageRecord{ID: 5, Seq: 1, Role: persistence.RoleAssistant, Content: "Hel", IsActive: true})},
		{Seq: 2, Kind: persistence.EventMessageUpdated, Body: body(t, persistence.MessageRecord{ID: 5, Seq: 1, Role: persistence.RoleAssistant, Content: "lo, ", ContentFrom: 3, Reasoning: "think"})},
		{Seq: 3, Kind: persistence.EventMessageUpdated, Body: body(t, persistence.MessageRecord{ID: 5, Seq: 1, Role: persistence.RoleAssistant, Content: "world", ContentFrom: 7, Reasoning: "ing", ReasoningFrom: 5})},
	}
	st, err := projection.Rebuild("s", evs)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Messages[0]; m.Content != "Hello, world" || m.Reasoning != "thinking" || !m.IsActive {
		t.Errorf("rebuilt %+v", m)
	}
	evs = append(evs, persistence.Event{Seq: 4, Kind: persistence.EventMessageUpdated,
		Body: body(t, persistence.MessageRecord{ID: 5, Seq: 1, Content: "!", ContentFrom: 99})})
	if _, err := projection.Rebuild("s", evs); err == nil || !strings.Contains(err.Error(), "appends at byte 99") {
		t.Errorf("an append at the wrong place: %v", err)
	}
}

// TestRebuildAppendAfterOldImport: earlier releases recorded an import into
// PostgreSQL with the text as the dump had it, NUL and all, while the table
// keeps a NUL as U+FFFD (three bytes): an update record appending at the
// stored length still rebuilds, to the stored text.
func TestRebuildAppendAfterOldImport(t *testing.T) {
	stored := persistence.ValidText("a reply \x00 cut")
	evs := []persistence.Event{
		{Seq: 1, Kind: persistence.EventSessionImported, Body: body(t, persistence.ImportRecord{Messages: []persistence.MessageRecord{
			{ID: 7, Seq: 1, Role: persistence.RoleAssistant, Content: "a reply \x00 cut", Status: persistence.StatusStreaming, IsActive: true}}})},
		{Seq: 2, Kind: persistence.EventMessageUpdated, Body: body(t, persistence.MessageRecord{ID: 7, Seq: 1, Role: persistence.RoleAssistant,
			Content: " and more", ContentFrom: len(stored), Status: persistence.StatusInterrupted})},
	}
	st, err := projection.Rebuild("s", evs)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Messages[0].Content; got != stored+" and more" {
		t.Errorf("rebuilt %q, want %q", got, stored+" and more")
	}
}

// body is v's JSON.
func body(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
