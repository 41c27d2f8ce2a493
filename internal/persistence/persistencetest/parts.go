package persistencetest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// testPartsStoredOnce checks that a message whose parts are one text block equal
// to its content keeps that text once (in content) and reads back the same
// parts, that every other shape of parts reads back as written, and that a
// row written before (the text in both columns) still reads.
func testPartsStoredOnce(t *testing.T, b Backend) {
	s, db := b.open(t), b.DB(t)
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "parts"})
	text := strings.Repeat("a prompt of plain text, \"quoted\", é, \n", 20)
	cases := []*persistence.Message{
		{Role: persistence.RoleUser, Content: text, Parts: []persistence.Part{{Type: "text", Text: text}}},
		// Not the content: kept as JSON.
		{Role: persistence.RoleUser, Content: text, Parts: []persistence.Part{{Type: "text", Text: text + "!"}}},
		{Role: persistence.RoleUser, Content: text, Parts: []persistence.Part{{Type: "text", Text: text, Name: "n"}}},
		{Role: persistence.RoleUser, Content: text, Parts: []persistence.Part{{Type: "text", Text: text}, {Type: "text", Text: text}}},
		{Role: persistence.RoleUser, Content: "", Parts: []persistence.Part{{Type: "text"}}},
		{Role: persistence.RoleUser, Content: text, Parts: []persistence.Part{}},
		{Role: persistence.RoleUser, Content: text},
	}
	mustAppend(t, s, "parts", cases...)
	got := mustMessages(t, s, "parts", persistence.MessageFilter{})
	for i, want := range cases {
		if !reflect.DeepEqual(got[i].Parts, want.Parts) || (got[i].Parts == nil) != (want.Parts == nil) {
			t.Errorf("message %d: Parts = %#v, want %#v", i, got[i].Parts, want.Parts)
		}
	}
	if raw := parts(t, db, cases[0].ID); raw == nil || strings.Contains(*raw, "plain text") {
		t.Errorf("parts equal to the content are stored again: %s", show(raw))
	}
	if raw := parts(t, db, cases[1].ID); raw == nil || !strings.Contains(*raw, "plain text") {
		t.Errorf("parts other than the content are not stored: %s", show(raw))
	}
	if raw := parts(t, db, cases[len(cases)-1].ID); raw != nil {
		t.Errorf("no parts stored as %q, want NULL", *raw)
	}

	// An update rewrites the content, never the parts: those stored as
	// the content keep the text they had.
	upd := *cases[0]
	upd.Content = "the content rewritten"
	must(t, s.UpdateMessage(ctx, &upd))
	got = mustMessages(t, s, "parts", persistence.MessageFilter{AfterSeq: cases[0].Seq - 1})
	if got[0].Content != upd.Content || !reflect.DeepEqual(got[0].Parts, cases[0].Parts) {
		t.Errorf("after an update of the content: Content %q, Parts %#v; want Parts %#v as they were", got[0].Content, got[0].Parts, cases[0].Parts)
	}

	// A row as stores wrote it before: the text in both columns.
	old := &persistence.Message{Role: persistence.RoleUser, Content: "old prompt"}
	mustAppend(t, s, "parts", old)
	db.mustExec(t, `UPDATE messages SET parts = ? WHERE id = ?`, `[{"type":"text","text":"old prompt"}]`, old.ID)
	got = mustMessages(t, s, "parts", persistence.MessageFilter{AfterSeq: old.Seq - 1})
	if want := []persistence.Part{{Type: "text", Text: "old prompt"}}; len(got) != 1 || !reflect.DeepEqual(got[0].Parts, want) {
		t.Errorf("an old row reads back as %+v, want Parts %+v", got, want)
	}
}

// parts is the parts column of message id (nil: NULL).
func parts(t *testing.T, db DB, id int64) (col *string) {
	t.Helper()
	must(t, db.QueryRow(`SELECT parts FROM messages WHERE id = ?`, id).Scan(&col))
	return col
}

func show(col *string) string {
	if col == nil {
		return "NULL"
	}
	return *col
}
