package persistencetest

import (
	"encoding/json"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// testOddText stores text a tool's output may hold (NUL, bytes that are
// not UTF-8) without failing; the store keeps it as it is or as
// persistence.ValidText has it, and hands back what it stored. Valid Unicode
// of every kind comes back exactly.
func testOddText(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	const valid = "emoji 🦀, CJK 漢字, RTL עברית, combining e\u0301, U+FFFD \uFFFD, LS \u2028, tab\t, CR\r\n"
	const odd = "NUL \x00 here, lone \xff byte, cut \xe2\x82 sequence, " + valid

	sess := &persistence.Session{ID: "odd", Title: odd}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession with odd text in the title: %v", err)
	}
	checkText(t, "Title", odd, sess.Title, mustGet(t, s, "odd").Title)

	m := &persistence.Message{Role: persistence.RoleTool, Content: odd, Reasoning: odd, ToolCallID: "call\x00\xff",
		Parts: []persistence.Part{{Type: "text", Text: odd}}}
	if err := s.AppendMessages(ctx, "odd", m); err != nil {
		t.Fatalf("AppendMessages with odd text: %v", err)
	}
	v := &persistence.Message{Role: persistence.RoleUser, Content: valid, Reasoning: valid}
	mustAppend(t, s, "odd", v)
	got := mustMessages(t, s, "odd", persistence.MessageFilter{})
	checkText(t, "Content", odd, m.Content, got[0].Content)
	checkText(t, "Reasoning", odd, m.Reasoning, got[0].Reasoning)
	checkText(t, "ToolCallID", "call\x00\xff", m.ToolCallID, got[0].ToolCallID)
	if len(got[0].Parts) != 1 {
		t.Fatalf("Parts = %+v", got[0].Parts)
	}
	// Parts are JSON: they keep NUL and lose the invalid bytes, in every
	// store alike.
	var viaJSON string
	b, _ := json.Marshal(odd)
	json.Unmarshal(b, &viaJSON)
	if got[0].Parts[0].Text != viaJSON {
		t.Errorf("Parts[0].Text = %q, want %q", got[0].Parts[0].Text, viaJSON)
	}
	if got[1].Content != valid || got[1].Reasoning != valid {
		t.Errorf("valid Unicode changed: %q", got[1].Content)
	}

	sess.Title = valid
	must(t, s.UpdateSession(ctx, sess))
	if got := mustGet(t, s, "odd").Title; got != valid {
		t.Errorf("Title = %q, want %q", got, valid)
	}
}

// checkText: stored must be orig or ValidText(orig), and equal what the
// store handed back.
func checkText(t *testing.T, what, orig, handedBack, stored string) {
	t.Helper()
	if stored != orig && stored != persistence.ValidText(orig) {
		t.Errorf("%s stored as %q, want %q or %q", what, stored, orig, persistence.ValidText(orig))
	}
	if handedBack != stored {
		t.Errorf("%s: handed back %q, stored %q", what, handedBack, stored)
	}
}
