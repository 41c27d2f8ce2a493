// Package persistencetest checks that a persistence.Store honours the
// contract documented on the interface, whatever its backend.
//
// A backend's tests call Conformance with a Backend: how to open a store
// on a fresh, empty database, and the few things the checks that look
// under the Store interface need (see sqlite's TestConformance).
//
// The store tests check behaviour only: times are compared with
// time.Time.Equal and caller-supplied times have microsecond precision;
// JSON is compared by value, not by bytes; a nil slice and an empty one are
// interchangeable.
package persistencetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Conformance runs the Store contract against b's stores.
func Conformance(t *testing.T, b Backend) {
	tests := []storeTest{
		{"CreateGetSession", testCreateGetSession},
		{"CreateSessionConflict", testCreateSessionConflict},
		{"UpdateSession", testUpdateSession},
		{"InvalidJSON", testInvalidJSON},
		{"ListSessionsOrder", testListSessionsOrder},
		{"ListSessionsCwd", testListSessionsCwd},
		{"ListSessionsLimits", testListSessionsLimits},
		{"ListSessionsStableCursor", testListSessionsStableCursor},
		{"ListSessionsInvalidCursor", testListSessionsInvalidCursor},
		{"DeleteSession", testDeleteSession},
		{"AppendMessages", testAppendMessages},
		{"AppendMessagesErrors", testAppendMessagesErrors},
		{"MessagesFilter", testMessagesFilter},
		{"ConcurrentAppend", testConcurrentAppend},
		{"ApplyCompaction", testApplyCompaction},
		{"ApplyCompactionErrors", testApplyCompactionErrors},
		{"CanceledContext", testCanceledContext},
		{"ImportSession", testImportSession},
		{"ForkSession", testForkSession},
		{"OddText", testOddText},
		{"PermissionRules", testPermissionRules},
		{"RevokePermissionRules", testRevokePermissionRules},
		{"WindowCache", testWindowCache},
	}
	tests = append(tests, compactionTests...)
	tests = append(tests, eventTests...)      // events.go
	tests = append(tests, eventBytesTests...) // eventbytes.go
	tests = append(tests, leaseTests...)      // lease.go
	tests = append(tests, checkpointTests...) // checkpoint.go
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, b.open(t))
		})
	}
	for _, tc := range processTests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, b.open)
		})
	}
	for _, tc := range backendTests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, b)
		})
	}
}

// processTests open two stores on one database, as two crow-acp processes
// (on one machine for SQLite, on several for PostgreSQL) would (processes.go
// unless marked).
var processTests = []struct {
	name string
	fn   func(t *testing.T, open func(t *testing.T) persistence.Store)
}{
	{"TwoStoresDifferentSessions", testTwoStoresDifferentSessions},
	{"TwoStoresOneSession", testTwoStoresOneSession},
	{"TwoStoresLease", testTwoStoresLease},     // processes_durability.go
	{"TwoStoresFencing", testTwoStoresFencing}, // processes_durability.go
	{"TwoStoresEvents", testTwoStoresEvents},   // processes_durability.go
	{"TwoStoresRevoke", testTwoStoresRevoke},   // permission.go
}

// backendTests need more of the backend than a store (backend.go unless
// marked).
var backendTests = []struct {
	name string
	fn   func(t *testing.T, b Backend)
}{
	{"ErrorsNameTheOperation", testErrorsNameTheOperation},
	{"AppendAtomicMidBatch", testAppendAtomicMidBatch},
	{"ExactRoundTrip", testExactRoundTrip},
	{"MigrationsRecordAndRefuseNewer", testMigrationsRecordAndRefuseNewer},
	{"MigrateFailureRollsBack", testMigrateFailureRollsBack},
	{"MigratePermissionRules", testMigratePermissionRules}, // permission.go
	{"UnreleasedFormatRefused", testUnreleasedFormatRefused},
	{"MigrateStreamNumbers", testMigrateStreamNumbers}, // streamnumbers.go
	{"PartsStoredOnce", testPartsStoredOnce},           // parts.go
	{"TextInRow", testTextInRow},                       // textrow.go
}

func testCreateGetSession(t *testing.T, s persistence.Store) {
	ctx := t.Context()

	before := time.Now()
	sess := &persistence.Session{
		ID:       "sess-1",
		Cwd:      "/home/u/project",
		Title:    "Fix the build",
		Metadata: json.RawMessage(`{"mode":"code","mcpServers":[{"name":"fs"}]}`),
	}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	checkRecent(t, "CreatedAt", sess.CreatedAt, before)
	checkRecent(t, "UpdatedAt", sess.UpdatedAt, before)
	got := mustGet(t, s, "sess-1")
	checkSession(t, *sess, *got)

	// Caller-supplied times are kept, whatever their location.
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	sess2 := &persistence.Session{
		ID:        "sess-2",
		CreatedAt: base.In(zone),
		UpdatedAt: base.Add(90 * time.Minute),
	}
	if err := s.CreateSession(ctx, sess2); err != nil {
		t.Fatalf("CreateSession with times: %v", err)
	}
	if !sess2.CreatedAt.Equal(base) || !sess2.UpdatedAt.Equal(base.Add(90*time.Minute)) {
		t.Errorf("CreateSession changed caller-supplied times: %v, %v", sess2.CreatedAt, sess2.UpdatedAt)
	}
	got2 := mustGet(t, s, "sess-2")
	checkSession(t, *sess2, *got2)
	if len(got2.Metadata) != 0 {
		t.Errorf("Metadata = %s, want empty", got2.Metadata)
	}

	_, err := s.GetSession(ctx, "no-such-session")
	if !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("GetSession(unknown) error = %v, want ErrNotFound", err)
	}
}

func testCreateSessionConflict(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "dup", Title: "first"})

	err := s.CreateSession(ctx, &persistence.Session{ID: "dup", Title: "second"})
	if !errors.Is(err, persistence.ErrConflict) {
		t.Fatalf("CreateSession(duplicate) error = %v, want ErrConflict", err)
	}
	if got := mustGet(t, s, "dup"); got.Title != "first" {
		t.Errorf("after conflict Title = %q, want %q", got.Title, "first")
	}
}

func testUpdateSession(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	sess := &persistence.Session{ID: "u", Cwd: "/a", Title: "old", Metadata: json.RawMessage(`{"v":1}`)}
	mustCreate(t, s, sess)
	created, prev := sess.CreatedAt, sess.UpdatedAt

	sess.Cwd, sess.Title, sess.Metadata = "/b", "new", json.RawMessage(`{"v":2,"model":"glm"}`)
	if err := s.UpdateSession(ctx, sess); err != nil {
		t.Fatalf("UpdateSession: %v", err)
	}
	if !sess.UpdatedAt.After(prev) {
		t.Errorf("UpdatedAt = %v, want after %v", sess.UpdatedAt, prev)
	}
	got := mustGet(t, s, "u")
	checkSession(t, persistence.Session{
		ID: "u", Cwd: "/b", Title: "new", Metadata: sess.Metadata,
		CreatedAt: created, UpdatedAt: sess.UpdatedAt,
	}, *got)

	// Every bump is strictly later, however fast the updates come.
	for i := range 5 {
		prev := sess.UpdatedAt
		if err := s.UpdateSession(ctx, sess); err != nil {
			t.Fatalf("UpdateSession #%d: %v", i, err)
		}
		if !sess.UpdatedAt.After(prev) {
			t.Fatalf("update #%d: UpdatedAt = %v, want after %v", i, sess.UpdatedAt, prev)
		}
	}

	// Even when the stored UpdatedAt is ahead of the clock.
	future := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	ahead := &persistence.Session{ID: "ahead", UpdatedAt: future}
	mustCreate(t, s, ahead)
	if err := s.UpdateSession(ctx, ahead); err != nil {
		t.Fatalf("UpdateSession(ahead): %v", err)
	}
	if !ahead.UpdatedAt.After(future) {
		t.Errorf("UpdatedAt moved from %v to %v, want strictly later", future, ahead.UpdatedAt)
	}

	// Nil metadata clears it.
	sess.Metadata = nil
	if err := s.UpdateSession(ctx, sess); err != nil {
		t.Fatalf("UpdateSession(nil metadata): %v", err)
	}
	if got := mustGet(t, s, "u"); len(got.Metadata) != 0 {
		t.Errorf("Metadata = %s, want empty", got.Metadata)
	}

	err := s.UpdateSession(ctx, &persistence.Session{ID: "ghost", Title: "x"})
	if !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("UpdateSession(unknown) error = %v, want ErrNotFound", err)
	}
	checkErr(t, "UpdateSession(unknown) created it: GetSession", errOf(s.GetSession(ctx, "ghost")), persistence.ErrNotFound)
}

func testInvalidJSON(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	bad := json.RawMessage(`{"unterminated":`)

	if err := s.CreateSession(ctx, &persistence.Session{ID: "bad", Metadata: bad}); err == nil {
		t.Error("CreateSession with invalid Metadata: no error")
	}
	checkErr(t, "invalid session was stored: GetSession", errOf(s.GetSession(ctx, "bad")), persistence.ErrNotFound)

	sess := &persistence.Session{ID: "ok", Metadata: json.RawMessage(`{"a":1}`)}
	mustCreate(t, s, sess)
	if err := s.UpdateSession(ctx, &persistence.Session{ID: "ok", Metadata: bad}); err == nil {
		t.Error("UpdateSession with invalid Metadata: no error")
	}
	checkJSON(t, "Metadata after failed update", json.RawMessage(`{"a":1}`), mustGet(t, s, "ok").Metadata)

	// A batch fails whole: its valid message is neither stored nor filled.
	good := userMsg("good")
	if err := s.AppendMessages(ctx, "ok", good, &persistence.Message{Role: persistence.RoleUser, Meta: bad}); err == nil || good.ID != 0 {
		t.Errorf("AppendMessages of a valid message and one with invalid Meta: %v, the valid one given id %d", err, good.ID)
	}
	m := userMsg("hello")
	mustAppend(t, s, "ok", m)
	err := ApplyCompaction(ctx, s, &persistence.Compaction{
		SessionID: "ok", Policy: "p", CompactedIDs: []int64{m.ID}, Settings: bad,
	}, nil)
	if err == nil {
		t.Error("ApplyCompaction with invalid Settings: no error")
	}
	if got := mustMessages(t, s, "ok", persistence.MessageFilter{}); len(got) != 1 || !got[0].IsActive || got[0].Seq != 1 {
		t.Errorf("after failed writes: messages = %+v, want the one active message, seq 1 (no seq used up)", got)
	}
}

func testListSessionsOrder(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	if list, next, err := s.ListSessions(ctx, persistence.ListSessionsOptions{}); err != nil || len(list) != 0 || next != "" {
		t.Fatalf("ListSessions(empty store) = %d sessions, %q, %v; want none", len(list), next, err)
	}

	// Created out of order; c, d and e tie on UpdatedAt.
	for _, c := range []struct {
		id string
		at time.Duration
	}{{"e", 2}, {"b", 1}, {"c", 2}, {"a", 3}, {"d", 2}} {
		mustCreate(t, s, &persistence.Session{ID: c.id, CreatedAt: base, UpdatedAt: base.Add(c.at * time.Second)})
	}
	want := []string{"a", "c", "d", "e", "b"}

	list, next, err := s.ListSessions(ctx, persistence.ListSessionsOptions{})
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	if got := ids(list); !slices.Equal(got, want) || next != "" {
		t.Errorf("ListSessions = %v, %q; want %v, \"\"", got, next, want)
	}
	for _, sess := range list {
		checkSession(t, *mustGet(t, s, sess.ID), sess)
	}

	// A full last page still says it is the last.
	list, next, err = s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: len(want)})
	if err != nil || len(list) != len(want) || next != "" {
		t.Errorf("ListSessions(limit = count) = %v, %q, %v; want all and no cursor", ids(list), next, err)
	}

	pages := listPages(t, s, persistence.ListSessionsOptions{Limit: 2})
	wantPages := [][]string{{"a", "c"}, {"d", "e"}, {"b"}}
	if !reflect.DeepEqual(pages, wantPages) {
		t.Errorf("pages of 2 = %v, want %v", pages, wantPages)
	}
}

func testListSessionsCwd(t *testing.T, s persistence.Store) {
	for i := range 6 {
		cwd := "/x"
		if i%2 == 1 {
			cwd = "/y"
		}
		mustCreate(t, s, &persistence.Session{
			ID: fmt.Sprintf("s%d", i), Cwd: cwd, CreatedAt: base, UpdatedAt: base.Add(time.Duration(i) * time.Minute),
		})
	}
	mustCreate(t, s, &persistence.Session{ID: "sub", Cwd: "/x/sub", CreatedAt: base, UpdatedAt: base})

	pages := listPages(t, s, persistence.ListSessionsOptions{Cwd: "/x", Limit: 2})
	if want := [][]string{{"s4", "s2"}, {"s0"}}; !reflect.DeepEqual(pages, want) {
		t.Errorf("cwd /x pages = %v, want %v", pages, want)
	}
	pages = listPages(t, s, persistence.ListSessionsOptions{Cwd: "/y"})
	if want := [][]string{{"s5", "s3", "s1"}}; !reflect.DeepEqual(pages, want) {
		t.Errorf("cwd /y pages = %v, want %v", pages, want)
	}
	for _, cwd := range []string{"/", "/x/", "/X", "x"} {
		pages = listPages(t, s, persistence.ListSessionsOptions{Cwd: cwd})
		if len(pages) != 1 || len(pages[0]) != 0 {
			t.Errorf("cwd %q pages = %v, want none (exact match)", cwd, pages)
		}
	}
}

func testListSessionsLimits(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	n := persistence.MaxListLimit + 1
	for i := range n {
		mustCreate(t, s, &persistence.Session{
			ID: fmt.Sprintf("s%04d", i), CreatedAt: base, UpdatedAt: base.Add(time.Duration(i) * time.Second),
		})
	}
	for _, limit := range []int{0, -1} {
		list, next, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: limit})
		if err != nil {
			t.Fatalf("ListSessions(limit %d): %v", limit, err)
		}
		if len(list) != persistence.DefaultListLimit || next == "" {
			t.Errorf("ListSessions(limit %d) = %d sessions, cursor %q; want %d and a cursor",
				limit, len(list), next, persistence.DefaultListLimit)
		}
		if len(list) > 0 && list[0].ID != fmt.Sprintf("s%04d", n-1) {
			t.Errorf("ListSessions(limit %d) starts with %s, want the newest", limit, list[0].ID)
		}
	}

	list, next, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: 10 * n})
	if err != nil {
		t.Fatalf("ListSessions(huge limit): %v", err)
	}
	if len(list) != persistence.MaxListLimit || next == "" {
		t.Fatalf("ListSessions(huge limit) = %d sessions, cursor %q; want %d and a cursor",
			len(list), next, persistence.MaxListLimit)
	}
	rest, next, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: 10 * n, Cursor: next})
	if err != nil {
		t.Fatalf("ListSessions(second page): %v", err)
	}
	if got := ids(rest); !slices.Equal(got, []string{"s0000"}) || next != "" {
		t.Errorf("second page = %v, %q; want [s0000], \"\"", got, next)
	}
}

func testListSessionsStableCursor(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	var want []string
	for i := range 10 {
		id := fmt.Sprintf("s%d", i)
		mustCreate(t, s, &persistence.Session{ID: id, CreatedAt: base, UpdatedAt: base.Add(time.Duration(i) * time.Second)})
		want = append(want, id)
	}
	slices.Reverse(want)

	first, next, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: 3})
	if err != nil || next == "" {
		t.Fatalf("first page: %v, cursor %q", err, next)
	}
	// While paging: a new session appears and a seen one is bumped to the top.
	mustCreate(t, s, &persistence.Session{ID: "newcomer"})
	bumped := first[1]
	must(t, s.UpdateSession(ctx, &bumped))

	seen := ids(first)
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("cursor never ends")
		}
		var list []persistence.Session
		list, next, err = s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: 3, Cursor: next})
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		seen = append(seen, ids(list)...)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("paged through %v, want %v (no duplicates, no skips)", seen, want)
	}
}

func testListSessionsInvalidCursor(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "a"})
	for _, c := range []string{"!!! not a cursor !!!", "aGVsbG8", "%"} {
		_, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Cursor: c})
		if !errors.Is(err, persistence.ErrInvalidCursor) {
			t.Errorf("ListSessions(cursor %q) error = %v, want ErrInvalidCursor", c, err)
		}
	}
}

func testDeleteSession(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "gone", Cwd: "/w"})
	mustCreate(t, s, &persistence.Session{ID: "kept", Cwd: "/w"})
	a1, a2 := userMsg("a1"), userMsg("a2")
	mustAppend(t, s, "gone", a1, a2)
	mustAppend(t, s, "kept", userMsg("k1"), userMsg("k2"))
	c := &persistence.Compaction{SessionID: "gone", Policy: "summarise", CompactedIDs: []int64{a1.ID}}
	mustCompact(t, s, c, &persistence.Message{Role: persistence.RoleSummary, Content: "sum"})

	if err := s.DeleteSession(ctx, "gone"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	checkErr(t, "GetSession(deleted)", errOf(s.GetSession(ctx, "gone")), persistence.ErrNotFound)
	checkErr(t, "Messages(deleted)", errOf(s.Messages(ctx, "gone", persistence.MessageFilter{})), persistence.ErrNotFound)
	checkErr(t, "Compactions(deleted)", errOf(s.Compactions(ctx, "gone")), persistence.ErrNotFound)
	if gone, kept := len(mustEvents(t, s, "gone")), len(mustEvents(t, s, "kept")); gone != 0 || kept != 2 {
		t.Errorf("after delete: %d events of the deleted session, %d of the other; want 0 and 2", gone, kept)
	}
	list, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Cwd: "/w"})
	if err != nil || !slices.Equal(ids(list), []string{"kept"}) {
		t.Errorf("ListSessions after delete = %v, %v; want [kept]", ids(list), err)
	}
	if got := mustMessages(t, s, "kept", persistence.MessageFilter{}); len(got) != 2 {
		t.Errorf("other session has %d messages, want 2", len(got))
	}

	for _, id := range []string{"gone", "never-existed"} {
		if err := s.DeleteSession(ctx, id); err != nil {
			t.Errorf("DeleteSession(%q) = %v, want nil", id, err)
		}
	}

	// The id can be reused, and the new session starts from scratch.
	mustCreate(t, s, &persistence.Session{ID: "gone"})
	if got := mustMessages(t, s, "gone", persistence.MessageFilter{}); len(got) != 0 {
		t.Errorf("recreated session has %d messages, want 0", len(got))
	}
	if got, err := s.Compactions(ctx, "gone"); err != nil || len(got) != 0 {
		t.Errorf("recreated session: Compactions = %d, %v; want none", len(got), err)
	}
	checkNextSeq(t, s, "gone", 1, "first seq of recreated session")
}

func testAppendMessages(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	sess := &persistence.Session{ID: "chat"}
	mustCreate(t, s, sess)

	user := &persistence.Message{
		Role:    persistence.RoleUser,
		Content: "what is in this picture?",
		Parts: []persistence.Part{
			{Type: "text", Text: "what is in this picture?"},
			{Type: "image", MimeType: "image/png", Data: "iVBORw0KGgo="},
			{Type: "resource_link", URI: "file:///tmp/a.go", Name: "a.go"},
		},
		TokenCount: 12,
		CreatedAt:  base,
	}
	assistant := &persistence.Message{
		Role:      persistence.RoleAssistant,
		Content:   "Let me look.",
		Reasoning: "The user wants a description.",
		ToolCalls: []persistence.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path":"/tmp/a.go"}`},
			{ID: "call_2", Name: "ls", Arguments: `{}`},
		},
		Status:     persistence.StatusCancelled,
		Meta:       json.RawMessage(`{"title":"Read a.go","kind":"read"}`),
		TokenCount: 40,
		// The store decides these:
		IsActive:        false,
		CompactedIntoID: new(int64(99)),
	}
	tool := &persistence.Message{
		Role:       persistence.RoleTool,
		Content:    "package a\n\nfunc A() {}\n",
		ToolCallID: "call_1",
		Status:     persistence.StatusComplete,
		SessionID:  "chat", // matching is fine
	}
	before := time.Now()
	if err := s.AppendMessages(ctx, "chat", user, assistant, tool); err != nil {
		t.Fatalf("AppendMessages: %v", err)
	}
	for i, m := range []*persistence.Message{user, assistant, tool} {
		if m.Seq != int64(i+1) {
			t.Errorf("message %d: Seq = %d, want %d", i, m.Seq, i+1)
		}
		if m.ID == 0 || m.SessionID != "chat" || !m.IsActive || m.CompactedIntoID != nil {
			t.Errorf("message %d: ID %d, SessionID %q, IsActive %v, CompactedIntoID %v; want assigned, chat, true, nil",
				i, m.ID, m.SessionID, m.IsActive, m.CompactedIntoID)
		}
	}
	if !user.CreatedAt.Equal(base) {
		t.Errorf("caller-supplied CreatedAt changed to %v", user.CreatedAt)
	}
	checkRecent(t, "assistant CreatedAt", assistant.CreatedAt, before)
	if user.ID == assistant.ID || assistant.ID == tool.ID || user.ID == tool.ID {
		t.Errorf("IDs not unique: %d %d %d", user.ID, assistant.ID, tool.ID)
	}

	after := mustGet(t, s, "chat")
	if !after.UpdatedAt.After(sess.UpdatedAt) {
		t.Errorf("AppendMessages did not bump UpdatedAt: %v -> %v", sess.UpdatedAt, after.UpdatedAt)
	}

	// Seqs continue across calls.
	more1, more2 := userMsg("more 1"), userMsg("more 2")
	mustAppend(t, s, "chat", more1)
	mustAppend(t, s, "chat", more2)
	if more1.Seq != 4 || more2.Seq != 5 {
		t.Errorf("later seqs = %d, %d; want 4, 5", more1.Seq, more2.Seq)
	}

	got := mustMessages(t, s, "chat", persistence.MessageFilter{})
	want := []*persistence.Message{user, assistant, tool, more1, more2}
	if len(got) != len(want) {
		t.Fatalf("Messages = %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		checkMessage(t, fmt.Sprintf("message %d", i), *want[i], got[i])
	}

	// Appending nothing is allowed.
	if err := s.AppendMessages(ctx, "chat"); err != nil {
		t.Errorf("AppendMessages(no messages) = %v", err)
	}

	// The bump is strictly later even when UpdatedAt is ahead of the clock.
	future := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	mustCreate(t, s, &persistence.Session{ID: "ahead", UpdatedAt: future})
	mustAppend(t, s, "ahead", userMsg("x"))
	if got := mustGet(t, s, "ahead").UpdatedAt; !got.After(future) {
		t.Errorf("AppendMessages moved UpdatedAt from %v to %v, want strictly later", future, got)
	}
	c := &persistence.Compaction{SessionID: "ahead", Policy: "noop"}
	mustCompact(t, s, c)
	if got2 := mustGet(t, s, "ahead").UpdatedAt; !got2.After(future.Add(time.Nanosecond)) {
		t.Errorf("ApplyCompaction moved UpdatedAt to %v, want strictly later than the append's", got2)
	}
}

func testAppendMessagesErrors(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	m := userMsg("lost")
	err := s.AppendMessages(ctx, "no-such-session", m)
	if !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("AppendMessages(unknown session) error = %v, want ErrNotFound", err)
	}
	if m.ID != 0 || m.Seq != 0 || m.SessionID != "" {
		t.Errorf("failed append changed the message: ID %d, Seq %d, SessionID %q", m.ID, m.Seq, m.SessionID)
	}
	checkErr(t, "AppendMessages(unknown session, no messages)", s.AppendMessages(ctx, "no-such-session"), persistence.ErrNotFound)

	mustCreate(t, s, &persistence.Session{ID: "a"})
	mustCreate(t, s, &persistence.Session{ID: "b"})
	other := userMsg("for b")
	other.SessionID = "b"
	if err := s.AppendMessages(ctx, "a", other); err == nil {
		t.Error("AppendMessages with a message of another session: no error")
	}
	for _, id := range []string{"a", "b"} {
		if got := mustMessages(t, s, id, persistence.MessageFilter{}); len(got) != 0 {
			t.Errorf("session %s has %d messages after failed appends, want 0", id, len(got))
		}
	}
}

func testMessagesFilter(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "f"})
	if got := mustMessages(t, s, "f", persistence.MessageFilter{ActiveOnly: true}); len(got) != 0 {
		t.Errorf("empty session: %d messages", len(got))
	}
	var msgs []*persistence.Message
	for i := range 6 {
		msgs = append(msgs, userMsg(fmt.Sprint(i+1)))
	}
	mustAppend(t, s, "f", msgs...)
	c := &persistence.Compaction{SessionID: "f", Policy: "summarise", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID}}
	mustCompact(t, s, c, &persistence.Message{Role: persistence.RoleSummary, Content: "s"})

	for _, tc := range []struct {
		f    persistence.MessageFilter
		want []int64
	}{
		{persistence.MessageFilter{}, []int64{1, 2, 3, 4, 5, 6, 7}},
		{persistence.MessageFilter{ActiveOnly: true}, []int64{3, 4, 5, 6, 7}},
		{persistence.MessageFilter{AfterSeq: 4}, []int64{5, 6, 7}},
		{persistence.MessageFilter{AfterSeq: 1}, []int64{2, 3, 4, 5, 6, 7}},
		{persistence.MessageFilter{ActiveOnly: true, AfterSeq: 1}, []int64{3, 4, 5, 6, 7}},
		{persistence.MessageFilter{ActiveOnly: true, AfterSeq: 5}, []int64{6, 7}},
		{persistence.MessageFilter{AfterSeq: 7}, nil},
		{persistence.MessageFilter{AfterSeq: 100}, nil},
		{persistence.MessageFilter{Limit: 1}, []int64{1}},
		{persistence.MessageFilter{Limit: 3, AfterSeq: 2}, []int64{3, 4, 5}},
		{persistence.MessageFilter{Limit: 2, ActiveOnly: true}, []int64{3, 4}},
		{persistence.MessageFilter{Limit: 2, ActiveOnly: true, AfterSeq: 5}, []int64{6, 7}},
		{persistence.MessageFilter{Limit: 100}, []int64{1, 2, 3, 4, 5, 6, 7}},
		{persistence.MessageFilter{Limit: -1}, []int64{1, 2, 3, 4, 5, 6, 7}},
	} {
		got, err := s.Messages(ctx, "f", tc.f)
		if err != nil {
			t.Errorf("Messages(%+v): %v", tc.f, err)
			continue
		}
		if seqs := seqsOf(got); !slices.Equal(seqs, tc.want) {
			t.Errorf("Messages(%+v) seqs = %v, want %v", tc.f, seqs, tc.want)
		}
	}

	checkErr(t, "Messages(unknown)", errOf(s.Messages(ctx, "nope", persistence.MessageFilter{})), persistence.ErrNotFound)
}

func testConcurrentAppend(t *testing.T, s persistence.Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sess := &persistence.Session{ID: "busy"}
	mustCreate(t, s, sess)

	// Even writers append one message per call, odd writers two; readers
	// poll meanwhile.
	const writers, appends = 8, 50
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		batches [][]*persistence.Message
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := s.Messages(ctx, "busy", persistence.MessageFilter{ActiveOnly: true}); err != nil {
					fail(fmt.Errorf("reader: %w", err))
					return
				}
			}
		})
	}
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				batch := []*persistence.Message{userMsg(fmt.Sprintf("w%d-%d-a", w, i))}
				if w%2 == 1 {
					batch = append(batch, userMsg(fmt.Sprintf("w%d-%d-b", w, i)))
				}
				if err := s.AppendMessages(ctx, "busy", batch...); err != nil {
					fail(fmt.Errorf("writer %d append %d: %w", w, i, err))
					return
				}
				mu.Lock()
				batches = append(batches, batch)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d concurrent calls failed, first: %v", len(errs), errs[0])
	}

	total := writers / 2 * appends * 3
	got := mustMessages(t, s, "busy", persistence.MessageFilter{})
	if len(got) != total {
		t.Fatalf("Messages = %d, want %d", len(got), total)
	}
	byID := make(map[int64]persistence.Message, total)
	for i, m := range got {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has Seq %d: seqs are not gap-free and unique", i, m.Seq)
		}
		if _, dup := byID[m.ID]; dup {
			t.Fatalf("duplicate ID %d", m.ID)
		}
		byID[m.ID] = m
	}
	for _, batch := range batches {
		for j, m := range batch {
			stored, ok := byID[m.ID]
			if !ok || stored.Seq != m.Seq || stored.Content != m.Content {
				t.Fatalf("returned %d/%d/%q, stored %+v", m.ID, m.Seq, m.Content, stored)
			}
			if j > 0 && m.Seq != batch[j-1].Seq+1 {
				t.Fatalf("batch not contiguous: seqs %d then %d", batch[j-1].Seq, m.Seq)
			}
		}
	}
	// Each writer's appends are in its own order.
	last := make(map[string]int64)
	for _, m := range got {
		var w, i int
		var half string
		if _, err := fmt.Sscanf(m.Content, "w%d-%d-%s", &w, &i, &half); err != nil {
			t.Fatalf("content %q: %v", m.Content, err)
		}
		key := fmt.Sprintf("%d-%s", w, half)
		if m.Seq <= last[key] {
			t.Fatalf("writer %d's messages out of order", w)
		}
		last[key] = m.Seq
	}
	if after := mustGet(t, s, "busy"); !after.UpdatedAt.After(sess.UpdatedAt) {
		t.Errorf("UpdatedAt not bumped")
	}
}

func testApplyCompaction(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "c"})
	var m []*persistence.Message
	for i := range 5 {
		m = append(m, userMsg(fmt.Sprint("m", i+1)))
	}
	mustAppend(t, s, "c", m...)
	before := mustGet(t, s, "c").UpdatedAt

	c1 := &persistence.Compaction{
		SessionID:    "c",
		Policy:       "summarise",
		CompactedIDs: []int64{m[0].ID, m[1].ID, m[2].ID},
		KeptIDs:      []int64{m[3].ID, m[4].ID},
		TokensBefore: 12000,
		TokensAfter:  3000,
		Settings:     json.RawMessage(`{"keepRecent":2,"model":"glm-4.6"}`),
	}
	summary := &persistence.Message{Role: persistence.RoleSummary, Content: "Summary of m1..m3", TokenCount: 50}
	start := time.Now()
	if err := ApplyCompaction(ctx, s, c1, summary); err != nil {
		t.Fatalf("ApplyCompaction: %v", err)
	}
	if c1.ID == 0 {
		t.Error("ApplyCompaction did not set ID")
	}
	checkRecent(t, "compaction CreatedAt", c1.CreatedAt, start)
	if summary.ID == 0 || summary.Seq != 6 || !summary.IsActive || summary.SessionID != "c" {
		t.Errorf("summary: ID %d, Seq %d, IsActive %v, SessionID %q; want assigned, 6, true, c",
			summary.ID, summary.Seq, summary.IsActive, summary.SessionID)
	}
	checkRecent(t, "summary CreatedAt", summary.CreatedAt, start)
	if c1.SummaryMessageID == nil || *c1.SummaryMessageID != summary.ID {
		t.Errorf("SummaryMessageID = %v, want %d", c1.SummaryMessageID, summary.ID)
	}
	if after := mustGet(t, s, "c").UpdatedAt; !after.After(before) {
		t.Errorf("ApplyCompaction did not bump UpdatedAt: %v -> %v", before, after)
	}

	all := mustMessages(t, s, "c", persistence.MessageFilter{})
	if len(all) != 6 {
		t.Fatalf("Messages = %d, want 6", len(all))
	}
	for i, msg := range all[:3] {
		if msg.IsActive || msg.CompactedIntoID == nil || *msg.CompactedIntoID != c1.ID {
			t.Errorf("m%d: IsActive %v, CompactedIntoID %v; want false, %d", i+1, msg.IsActive, msg.CompactedIntoID, c1.ID)
		}
	}
	for i, msg := range all[3:5] {
		if !msg.IsActive || msg.CompactedIntoID != nil {
			t.Errorf("m%d: IsActive %v, CompactedIntoID %v; want true, nil", i+4, msg.IsActive, msg.CompactedIntoID)
		}
	}
	checkMessage(t, "summary", *summary, all[5])
	active := mustMessages(t, s, "c", persistence.MessageFilter{ActiveOnly: true})
	if seqs := seqsOf(active); !slices.Equal(seqs, []int64{4, 5, 6}) {
		t.Errorf("active seqs = %v, want [4 5 6]", seqs)
	}

	// Without a summary, with a caller-supplied time.
	c2 := &persistence.Compaction{
		SessionID: "c", Policy: "prune-tool-output", CompactedIDs: []int64{m[3].ID},
		KeptIDs: []int64{m[4].ID, summary.ID}, TokensBefore: 3000, TokensAfter: 2500,
		CreatedAt: base, SummaryMessageID: new(int64(12345)),
	}
	if err := ApplyCompaction(ctx, s, c2, nil); err != nil {
		t.Fatalf("ApplyCompaction(no summary): %v", err)
	}
	if c2.ID == 0 || c2.ID == c1.ID || c2.SummaryMessageID != nil || !c2.CreatedAt.Equal(base) {
		t.Errorf("c2: ID %d, SummaryMessageID %v, CreatedAt %v; want new, nil, %v", c2.ID, c2.SummaryMessageID, c2.CreatedAt, base)
	}

	// Compacting a compacted message again points it at the latest compaction.
	c3 := &persistence.Compaction{SessionID: "c", Policy: "again", CompactedIDs: []int64{m[0].ID, m[0].ID}}
	if err := ApplyCompaction(ctx, s, c3, nil); err != nil {
		t.Fatalf("ApplyCompaction(again): %v", err)
	}
	all = mustMessages(t, s, "c", persistence.MessageFilter{})
	if p := all[0].CompactedIntoID; all[0].IsActive || p == nil || *p != c3.ID {
		t.Errorf("m1 after recompaction: IsActive %v, CompactedIntoID %v; want false, %d", all[0].IsActive, p, c3.ID)
	}
	if p := all[3].CompactedIntoID; all[3].IsActive || p == nil || *p != c2.ID {
		t.Errorf("m4: IsActive %v, CompactedIntoID %v; want false, %d", all[3].IsActive, p, c2.ID)
	}

	got, err := s.Compactions(ctx, "c")
	if err != nil {
		t.Fatalf("Compactions: %v", err)
	}
	want := []*persistence.Compaction{c1, c2, c3}
	if len(got) != len(want) {
		t.Fatalf("Compactions = %d records, want %d", len(got), len(want))
	}
	for i := range want {
		checkCompaction(t, fmt.Sprintf("compaction %d", i), *want[i], got[i])
	}
}

func testApplyCompactionErrors(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	summary := &persistence.Message{Role: persistence.RoleSummary, Content: "s"}
	err := ApplyCompaction(ctx, s, &persistence.Compaction{SessionID: "nope", Policy: "p"}, summary)
	if !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("ApplyCompaction(unknown session) error = %v, want ErrNotFound", err)
	}
	checkErr(t, "Compactions(unknown)", errOf(s.Compactions(ctx, "nope")), persistence.ErrNotFound)

	mustCreate(t, s, &persistence.Session{ID: "a"})
	mustCreate(t, s, &persistence.Session{ID: "b"})
	if got, err := s.Compactions(ctx, "a"); err != nil || len(got) != 0 {
		t.Errorf("Compactions(no compactions) = %d, %v; want none", len(got), err)
	}
	a1, b1 := userMsg("a1"), userMsg("b1")
	mustAppend(t, s, "a", a1)
	mustAppend(t, s, "b", b1)
	beforeA := mustGet(t, s, "a").UpdatedAt

	for _, compacted := range [][]int64{{a1.ID, b1.ID}, {a1.ID, 1 << 50}} {
		c := &persistence.Compaction{SessionID: "a", Policy: "p", CompactedIDs: compacted}
		err := ApplyCompaction(ctx, s, c, summary)
		if !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("ApplyCompaction(%v) error = %v, want ErrNotFound", compacted, err)
		}
		if c.ID != 0 || summary.ID != 0 || summary.Seq != 0 {
			t.Errorf("failed compaction filled c.ID %d, summary ID %d Seq %d", c.ID, summary.ID, summary.Seq)
		}
	}
	// Nothing of the failed compactions remains.
	for id, want := range map[string]int{"a": 1, "b": 1} {
		got := mustMessages(t, s, id, persistence.MessageFilter{ActiveOnly: true})
		if len(got) != want {
			t.Errorf("session %s: %d active messages, want %d", id, len(got), want)
		}
	}
	if got, err := s.Compactions(ctx, "a"); err != nil || len(got) != 0 {
		t.Errorf("Compactions after failures = %d, %v; want none", len(got), err)
	}
	if after := mustGet(t, s, "a").UpdatedAt; !after.Equal(beforeA) {
		t.Errorf("failed compaction bumped UpdatedAt")
	}
	checkNextSeq(t, s, "a", 2, "seq after failed compactions")
}

func testCanceledContext(t *testing.T, s persistence.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.CreateSession(ctx, &persistence.Session{ID: "x"}); err == nil {
		t.Error("CreateSession(canceled ctx): no error")
	}
	checkErr(t, "CreateSession(canceled ctx) stored the session", errOf(s.GetSession(t.Context(), "x")), persistence.ErrNotFound)
	mustCreate(t, s, &persistence.Session{ID: "y"})
	if err := s.AppendMessages(ctx, "y", userMsg("m")); err == nil {
		t.Error("AppendMessages(canceled ctx): no error")
	}
	if got := mustMessages(t, s, "y", persistence.MessageFilter{}); len(got) != 0 {
		t.Errorf("AppendMessages(canceled ctx) stored %d messages", len(got))
	}
}
