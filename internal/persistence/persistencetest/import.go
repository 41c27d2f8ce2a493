package persistencetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// RichSession fills session id of s with what a long session has: every
// message field, compactions with and without a summary, a message
// compacted twice, an expanded compaction, a deleted one (a gap in the
// seqs), cached token counts, an updated title.
func RichSession(t *testing.T, s persistence.Store, id string) {
	t.Helper()
	ctx := t.Context()
	sess := &persistence.Session{ID: id, Cwd: "/w/" + id, Title: "rich", CreatedAt: base,
		Metadata: json.RawMessage(`{"mode": "code",  "mcpServers":[]}`)}
	mustCreate(t, s, sess)
	var msgs []*persistence.Message
	for i := range 8 {
		m := userMsg(fmt.Sprint("m", i))
		switch i % 4 {
		case 1:
			m.Role, m.Reasoning, m.Status = persistence.RoleAssistant, "hmm", persistence.StatusCancelled
			m.ToolCalls = []persistence.ToolCall{{ID: fmt.Sprint("c", i), Name: "read", Arguments: `{"p":1}`}}
			m.Meta = json.RawMessage(`{"title":"Read","kind":"read"}`)
		case 2:
			m.Role, m.ToolCallID, m.TokenCount = persistence.RoleTool, fmt.Sprint("c", i-1), 99
			m.Content += " " + Prose(uint64(i), 2000) // long: kept in its record, not its row
		case 3:
			m.Parts = []persistence.Part{{Type: "text", Text: "hi"}, {Type: "image", MimeType: "image/png", Data: "AAAA"}}
			m.ToolCalls = []persistence.ToolCall{}
		}
		msgs = append(msgs, m)
	}
	mustAppend(t, s, id, msgs[:5]...)
	c1 := &persistence.Compaction{SessionID: id, Policy: "summarise", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID},
		KeptIDs: []int64{msgs[2].ID}, TokensBefore: 10, TokensAfter: 5, Settings: json.RawMessage(`{"k": 2}`)}
	mustCompact(t, s, c1, &persistence.Message{Role: persistence.RoleSummary, Content: "sum"})
	mustAppend(t, s, id, msgs[5:]...)
	c2 := &persistence.Compaction{SessionID: id, Policy: "prune", CompactedIDs: []int64{msgs[0].ID, msgs[3].ID}}
	mustCompact(t, s, c2)
	// Compacted with an added marker, then expanded: the originals active
	// again, the marker hidden, the record Expanded.
	c3 := &persistence.Compaction{SessionID: id, Policy: "prune-tool-output", CompactedIDs: []int64{msgs[6].ID}}
	marker := &persistence.Message{Role: persistence.RoleTool, Content: "[output pruned]", ToolCallID: "c5"}
	must(t, s.Compact(ctx, c3, []*persistence.Message{marker}))
	must(t, s.ExpandCompaction(ctx, id, c3.ID))
	// Compacted and then deleted for good: its summary is gone, leaving a
	// gap in the seqs.
	c4 := &persistence.Compaction{SessionID: id, Policy: "summarise", CompactedIDs: []int64{msgs[7].ID}}
	must(t, s.Compact(ctx, c4, []*persistence.Message{{Role: persistence.RoleSummary, Content: "gone"}}))
	must(t, s.DeleteCompaction(ctx, id, c4.ID))
	mustAppend(t, s, id, userMsg("tail"))
	must(t, s.SetTokenCounts(ctx, id, "o200k_base", map[int64]int{msgs[2].ID: 7, msgs[4].ID: 11}))
	sess.Title = "rich, updated"
	must(t, s.UpdateSession(ctx, sess))
}

// RichSessionMessages and RichSessionCompactions are what RichSession
// leaves in the store.
const (
	RichSessionMessages    = 11
	RichSessionCompactions = 3
)

func testImportSession(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	RichSession(t, s, "src")
	src := mustDump(t, s, "src")
	if len(src.Messages) != RichSessionMessages || len(src.Compactions) != RichSessionCompactions {
		t.Fatalf("dump has %d messages, %d compactions; want %d, %d", len(src.Messages), len(src.Compactions),
			RichSessionMessages, RichSessionCompactions)
	}

	// The same content under another id, as another store would receive it.
	d := mustDump(t, s, "src")
	d.Session.ID = "copy"
	for i := range d.Messages {
		d.Messages[i].SessionID = ""
	}
	want, err := persistence.Digest(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ImportSession(ctx, d); err != nil {
		t.Fatalf("ImportSession: %v", err)
	}
	got := mustDump(t, s, "copy")
	if digest, err := persistence.Digest(got); err != nil || digest != want {
		t.Errorf("digest of the imported session %s (%v), want %s", digest, err, want)
	}
	// d now holds the ids the store assigned, and reads back as stored.
	checkSession(t, d.Session, got.Session)
	if len(got.Messages) != len(d.Messages) {
		t.Fatalf("imported %d messages, want %d", len(got.Messages), len(d.Messages))
	}
	for i := range d.Messages {
		checkMessage(t, fmt.Sprint("imported message ", i), d.Messages[i], got.Messages[i])
		if got.Messages[i].ID == src.Messages[i].ID {
			t.Errorf("message %d kept the source id %d", i, got.Messages[i].ID)
		}
	}
	for i := range d.Compactions {
		checkCompaction(t, fmt.Sprint("imported compaction ", i), d.Compactions[i], got.Compactions[i])
	}
	if !got.Session.UpdatedAt.Equal(src.Session.UpdatedAt) {
		t.Errorf("import bumped UpdatedAt: %v, source %v", got.Session.UpdatedAt, src.Session.UpdatedAt)
	}
	// The seq counter continues after the imported messages.
	checkNextSeq(t, s, "copy", src.LastSeq()+1, "first seq after import")
	// Its messages and compactions rebuild from its log.
	verifyOK(t, s, "copy", "after the import and an append")
	// The source is untouched.
	if mustDigest(t, mustDump(t, s, "src")) != mustDigest(t, src) {
		t.Error("importing a copy changed the source session")
	}

	// An existing id is a conflict and changes nothing.
	d2 := mustDump(t, s, "src")
	checkErr(t, "ImportSession(existing id)", s.ImportSession(ctx, d2), persistence.ErrConflict)
	if n := len(mustMessages(t, s, "src", persistence.MessageFilter{})); n != RichSessionMessages {
		t.Errorf("after the conflict the session has %d messages, want %d", n, RichSessionMessages)
	}

	// A dangling reference stores nothing.
	bad := mustDump(t, s, "src")
	bad.Session.ID = "bad"
	for i := range bad.Messages {
		bad.Messages[i].SessionID = ""
	}
	bad.Compactions[0].KeptIDs = append(bad.Compactions[0].KeptIDs, 1<<50)
	if err := s.ImportSession(ctx, bad); err == nil || !strings.Contains(err.Error(), "not in the session") {
		t.Errorf("ImportSession with a dangling reference: error %v, want one about it", err)
	}
	checkErr(t, "a failed import left the session behind", errOf(s.GetSession(ctx, "bad")), persistence.ErrNotFound)
	// Seqs out of order are refused.
	bad.Compactions = nil
	for i := range bad.Messages {
		bad.Messages[i].CompactedIntoID = nil
	}
	if err := bad.Check(); err != nil {
		t.Fatalf("setting up: %v", err)
	}
	bad.Messages[2].Seq = bad.Messages[1].Seq
	if err := s.ImportSession(ctx, bad); err == nil {
		t.Error("ImportSession with a repeated seq: no error")
	}
	checkErr(t, "a failed import left the session behind", errOf(s.GetSession(ctx, "bad")), persistence.ErrNotFound)

	// An empty session imports too.
	empty := &persistence.SessionDump{Session: persistence.Session{ID: "empty", CreatedAt: base, UpdatedAt: base}}
	if err := s.ImportSession(ctx, empty); err != nil {
		t.Fatalf("ImportSession(empty): %v", err)
	}
	checkNextSeq(t, s, "empty", 1, "first seq of an imported empty session")
}

func mustDump(t *testing.T, s persistence.Store, id string) *persistence.SessionDump {
	t.Helper()
	d, err := persistence.Dump(t.Context(), s, id)
	if err != nil {
		t.Fatalf("Dump(%q): %v", id, err)
	}
	return d
}

func mustDigest(t *testing.T, d *persistence.SessionDump) string {
	t.Helper()
	digest, err := persistence.Digest(d)
	if err != nil {
		t.Fatal(err)
	}
	return digest
}
