package persistencetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// The checks below are shared by every part of the suite: they fail the
// test with what was wanted and what the store gave.

// storeTest checks a store on a new, empty database.
type storeTest struct {
	name string
	fn   func(t *testing.T, s persistence.Store)
}

// base is a fixed, caller-supplied time with microsecond precision.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC)

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func userMsg(text string) *persistence.Message {
	return &persistence.Message{Role: persistence.RoleUser, Content: text, Status: persistence.StatusComplete}
}

func mustCreate(t *testing.T, s persistence.Store, sess *persistence.Session) {
	t.Helper()
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatalf("CreateSession(%q): %v", sess.ID, err)
	}
}

func mustGet(t *testing.T, s persistence.Store, id string) *persistence.Session {
	t.Helper()
	sess, err := s.GetSession(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSession(%q): %v", id, err)
	}
	return sess
}

func mustAppend(t *testing.T, s persistence.Store, sessionID string, msgs ...*persistence.Message) {
	t.Helper()
	if err := s.AppendMessages(t.Context(), sessionID, msgs...); err != nil {
		t.Fatalf("AppendMessages(%q): %v", sessionID, err)
	}
}

func mustMessages(t *testing.T, s persistence.Store, sessionID string, f persistence.MessageFilter) []persistence.Message {
	t.Helper()
	msgs, err := s.Messages(t.Context(), sessionID, f)
	if err != nil {
		t.Fatalf("Messages(%q, %+v): %v", sessionID, f, err)
	}
	return msgs
}

// checkErr fails t unless err is (or wraps) want; what names the call.
func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// errOf is the error of a call whose value a check does not need.
func errOf[T any](_ T, err error) error { return err }

// checkNextSeq appends a message to the session and checks the seq it
// gets (why says when).
func checkNextSeq(t *testing.T, s persistence.Store, sessionID string, want int64, why string) {
	t.Helper()
	m := userMsg("next")
	mustAppend(t, s, sessionID, m)
	if m.Seq != want {
		t.Errorf("%s = %d, want %d", why, m.Seq, want)
	}
}

func mustEvents(t *testing.T, s persistence.Store, stream string) []persistence.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), stream, persistence.EventFilter{})
	if err != nil {
		t.Fatalf("Events(%q): %v", stream, err)
	}
	return evs
}

// listPages pages through ListSessions and returns the ids of each page.
func listPages(t *testing.T, s persistence.Store, opts persistence.ListSessionsOptions) [][]string {
	t.Helper()
	var pages [][]string
	for {
		list, next, err := s.ListSessions(t.Context(), opts)
		if err != nil {
			t.Fatalf("ListSessions(%+v): %v", opts, err)
		}
		pages = append(pages, ids(list))
		if next == "" {
			return pages
		}
		if len(pages) > 1000 {
			t.Fatal("ListSessions cursor never ends")
		}
		opts.Cursor = next
	}
}

func ids(list []persistence.Session) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

func seqsOf(msgs []persistence.Message) []int64 {
	var out []int64
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}

// checkRecent fails unless got was set by the store during this test.
func checkRecent(t *testing.T, what string, got, before time.Time) {
	t.Helper()
	if got.IsZero() {
		t.Errorf("%s not set", what)
		return
	}
	// Slack for backends that round to the microsecond or clocks that differ
	// slightly between client and server.
	if got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) {
		t.Errorf("%s = %v, want about now (%v)", what, got, before)
	}
}

func checkSession(t *testing.T, want, got persistence.Session) {
	t.Helper()
	if got.ID != want.ID || got.Cwd != want.Cwd || got.Title != want.Title {
		t.Errorf("session = {%q %q %q}, want {%q %q %q}", got.ID, got.Cwd, got.Title, want.ID, want.Cwd, want.Title)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("session %q times = %v, %v; want %v, %v", want.ID, got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	checkJSON(t, "session "+want.ID+" Metadata", want.Metadata, got.Metadata)
}

func checkMessage(t *testing.T, what string, want, got persistence.Message) {
	t.Helper()
	if got.ID != want.ID || got.SessionID != want.SessionID || got.Seq != want.Seq {
		t.Errorf("%s: ID/SessionID/Seq = %d/%q/%d, want %d/%q/%d", what, got.ID, got.SessionID, got.Seq, want.ID, want.SessionID, want.Seq)
	}
	if got.Role != want.Role || got.Content != want.Content || got.Reasoning != want.Reasoning ||
		got.ToolCallID != want.ToolCallID || got.Status != want.Status || got.TokenCount != want.TokenCount {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
	if len(got.Parts) != 0 || len(want.Parts) != 0 {
		if !reflect.DeepEqual(got.Parts, want.Parts) {
			t.Errorf("%s: Parts = %+v, want %+v", what, got.Parts, want.Parts)
		}
	}
	if len(got.ToolCalls) != 0 || len(want.ToolCalls) != 0 {
		if !reflect.DeepEqual(got.ToolCalls, want.ToolCalls) {
			t.Errorf("%s: ToolCalls = %+v, want %+v", what, got.ToolCalls, want.ToolCalls)
		}
	}
	checkJSON(t, what+" Meta", want.Meta, got.Meta)
	if got.IsActive != want.IsActive || !equalPtr(got.CompactedIntoID, want.CompactedIntoID) {
		t.Errorf("%s: IsActive %v, CompactedIntoID %v; want %v, %v", what, got.IsActive, got.CompactedIntoID, want.IsActive, want.CompactedIntoID)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: CreatedAt = %v, want %v", what, got.CreatedAt, want.CreatedAt)
	}
}

func checkCompaction(t *testing.T, what string, want, got persistence.Compaction) {
	t.Helper()
	if got.ID != want.ID || got.SessionID != want.SessionID || got.Policy != want.Policy ||
		got.TokensBefore != want.TokensBefore || got.TokensAfter != want.TokensAfter {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
	if !slices.Equal(got.CompactedIDs, want.CompactedIDs) || !slices.Equal(got.KeptIDs, want.KeptIDs) {
		t.Errorf("%s: CompactedIDs %v, KeptIDs %v; want %v, %v", what, got.CompactedIDs, got.KeptIDs, want.CompactedIDs, want.KeptIDs)
	}
	if !equalPtr(got.SummaryMessageID, want.SummaryMessageID) {
		t.Errorf("%s: SummaryMessageID = %v, want %v", what, got.SummaryMessageID, want.SummaryMessageID)
	}
	checkJSON(t, what+" Settings", want.Settings, got.Settings)
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: CreatedAt = %v, want %v", what, got.CreatedAt, want.CreatedAt)
	}
}

func equalPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// checkJSON compares JSON by value: key order and spacing may change.
func checkJSON(t *testing.T, what string, want, got json.RawMessage) {
	t.Helper()
	if len(want) == 0 || len(got) == 0 {
		if len(want) != len(got) {
			t.Errorf("%s = %s, want %s", what, got, want)
		}
		return
	}
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: bad test JSON: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: store returned invalid JSON %s: %v", what, got, err)
		return
	}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}
