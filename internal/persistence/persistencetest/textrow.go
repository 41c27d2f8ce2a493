package persistencetest

import (
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// testTextInRow checks that every message's text is whole in its row, as a
// person reading the database with sqlite3 or psql sees it: appended
// messages long and short, with escapes, and a reply saved as it grows
// (short and long saves, a status change, rewrites); every message reads
// back as written and the tables equal their rebuild from the log.
func testTextInRow(t *testing.T, b Backend) {
	s, db := b.open(t), b.DB(t)
	col := func(t *testing.T, id int64) (content string) {
		t.Helper()
		must(t, db.QueryRow(`SELECT content FROM messages WHERE id = ?`, id).Scan(&content))
		return content
	}
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "row"})
	prompt := Prose(11, 1500)
	escapes := strings.Repeat("\"quoted\" <tag> & \\ back\tslash, \u2028, é, 漢字,\n", 12)
	msgs := []*persistence.Message{
		{Role: persistence.RoleUser, Content: prompt, Parts: []persistence.Part{{Type: "text", Text: prompt}}},
		{Role: persistence.RoleAssistant, Content: escapes, Reasoning: "short reasoning"},
		{Role: persistence.RoleTool, ToolCallID: "call_1", Content: Prose(12, 3000)},
		{Role: persistence.RoleUser, Content: "short"},
	}
	mustAppend(t, s, "row", msgs...)
	for i, m := range msgs {
		if got := col(t, m.ID); got != m.Content {
			t.Errorf("message %d (%d bytes): the row's content is %d bytes %.40q", i, len(m.Content), len(got), got)
		}
	}
	got := mustMessages(t, s, "row", persistence.MessageFilter{})
	for i, m := range msgs {
		checkMessage(t, "message "+string(rune('0'+i)), *m, got[i])
	}
	reply := &persistence.Message{Role: persistence.RoleAssistant, Status: persistence.StatusStreaming}
	mustAppend(t, s, "row", reply)
	long := Prose(14, 4000)
	for _, st := range []struct {
		content string
		status  persistence.MessageStatus
	}{
		{"Hel", persistence.StatusStreaming},
		{"Hel" + long[:2000], persistence.StatusStreaming},
		{"Hel" + long, persistence.StatusStreaming},
		{"Hel" + long, persistence.StatusComplete},
		{Prose(15, 1000), persistence.StatusComplete},
	} {
		reply.Content, reply.Status = st.content, st.status
		must(t, s.UpdateMessage(ctx, reply))
		if got := col(t, reply.ID); got != st.content {
			t.Errorf("a save of %d bytes: the row's content is %d bytes", len(st.content), len(got))
		}
	}
	verifyOK(t, s, "row", "after appends and saves")
}
