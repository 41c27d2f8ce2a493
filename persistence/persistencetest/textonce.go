package persistencetest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/persistence"
)

// TextColumns reads a message's raw content and content_at columns (nil:
// NULL), for tests that look under the Store interface.
type TextColumns func(t *testing.T, id int64) (content string, at *string)

// TextStoredOnce checks that a message's long text is kept once, in the
// event log, and not again in its row (issue 19): appended messages,
// a reply saved as it grows (small and long saves, a status change, an
// interruption, rewrites), reads of every filter, a compaction; every
// message reads back as written and the tables equal their rebuild from
// the log after each step. Short text and text JSON would change (invalid
// UTF-8) stay in the row.
func TextStoredOnce(t *testing.T, s persistence.Store, cols TextColumns) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "once"})
	prompt := Prose(11, 1500)
	escapes := strings.Repeat("\"quoted\" <tag> & \\ back\tslash, \u2028, é, 漢字, NUL \x00,\n", 12)
	msgs := []*persistence.Message{
		{Role: persistence.RoleUser, Content: prompt, Parts: []persistence.Part{{Type: "text", Text: prompt}}},
		{Role: persistence.RoleAssistant, Content: escapes, Reasoning: "short reasoning"},
		{Role: persistence.RoleTool, ToolCallID: "call_1", Content: Prose(12, 3000)},
		{Role: persistence.RoleUser, Content: "short"},
		{Role: persistence.RoleTool, ToolCallID: "call_2", Content: Prose(13, 600) + "\xff stray byte"},
	}
	mustAppend(t, s, "once", msgs...)
	// PostgreSQL keeps the stray byte as U+FFFD: valid text, not in the row.
	inRow := []bool{false, false, false, true, !utf8.ValidString(msgs[4].Content)}
	for i, m := range msgs {
		content, at := cols(t, m.ID)
		if inRow[i] != (at == nil) || inRow[i] != (content == m.Content) {
			t.Errorf("message %d (%d bytes): row content %d bytes, content_at %v; want the text in the row: %v",
				i, len(m.Content), len(content), at, inRow[i])
		}
	}
	got := mustMessages(t, s, "once", persistence.MessageFilter{})
	for i, m := range msgs {
		checkMessage(t, "message "+string(rune('0'+i)), *m, got[i])
	}
	verifyOK(t, s, "once", "after appending long messages")

	// A reply saved as it grows, as the agent does.
	reply := &persistence.Message{Role: persistence.RoleAssistant, Status: persistence.StatusStreaming}
	mustAppend(t, s, "once", reply)
	long := Prose(14, 4000)
	steps := []struct {
		what    string
		content string
		status  persistence.MessageStatus
		inRow   bool
	}{
		{"a first short save", "Hel", persistence.StatusStreaming, true},
		{"a long save", "Hel" + long[:2000], persistence.StatusStreaming, false},
		{"a short save after it", "Hel" + long[:2010], persistence.StatusStreaming, false},
		{"another long save", "Hel" + long, persistence.StatusStreaming, false},
		{"the status alone", "Hel" + long, persistence.StatusComplete, false},
		{"a long rewrite", Prose(15, 1000), persistence.StatusComplete, false},
		{"a short rewrite", "short again", persistence.StatusComplete, true},
		{"long again", "short again" + Prose(16, 800), persistence.StatusStreaming, false},
	}
	for _, st := range steps {
		reply.Content, reply.Status = st.content, st.status
		if err := s.UpdateMessage(ctx, reply); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if content, at := cols(t, reply.ID); st.inRow != (at == nil) || st.inRow && content != st.content {
			t.Errorf("%s: row content %d bytes, content_at %v; want the text in the row: %v", st.what, len(content), at, st.inRow)
		}
		back := mustMessages(t, s, "once", persistence.MessageFilter{AfterSeq: reply.Seq - 1})
		if len(back) != 1 || back[0].Content != st.content || back[0].Status != st.status {
			t.Fatalf("%s: read back %d messages, content %d bytes", st.what, len(back), len(back[0].Content))
		}
		verifyOK(t, s, "once", "after "+st.what)
	}
	if n, err := s.InterruptStreaming(ctx, "once"); err != nil || n != 1 {
		t.Fatalf("InterruptStreaming = %d, %v", n, err)
	}
	last := mustMessages(t, s, "once", persistence.MessageFilter{AfterSeq: reply.Seq - 1})
	if last[0].Content != reply.Content || last[0].Status != persistence.StatusInterrupted {
		t.Errorf("after InterruptStreaming: %d bytes, %s", len(last[0].Content), last[0].Status)
	}
	verifyOK(t, s, "once", "after InterruptStreaming")

	// Filters read the text of just the rows they return.
	part := mustMessages(t, s, "once", persistence.MessageFilter{AfterSeq: msgs[1].Seq, Limit: 2})
	if len(part) != 2 || part[0].Content != msgs[2].Content || part[1].Content != msgs[3].Content {
		t.Errorf("a page of two: %d messages", len(part))
	}

	// A compaction leaves the text where it is; the summary is new.
	sum := &persistence.Message{Role: persistence.RoleSummary, Content: Prose(17, 900)}
	c := &persistence.Compaction{SessionID: "once", Policy: "summarize", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID, msgs[2].ID},
		KeptIDs: []int64{msgs[3].ID, msgs[4].ID, reply.ID}, MessagesBefore: 6, MessagesAfter: 4}
	mustCompact(t, s, c, sum)
	active := mustMessages(t, s, "once", persistence.MessageFilter{ActiveOnly: true})
	if len(active) != 4 || active[0].Content != msgs[3].Content || active[2].Content != reply.Content || active[3].Content != sum.Content {
		t.Errorf("active after the compaction: %d messages", len(active))
	}
	verifyOK(t, s, "once", "after a compaction")
	if err := s.ExpandCompaction(ctx, "once", c.ID); err != nil {
		t.Fatal(err)
	}
	all := mustMessages(t, s, "once", persistence.MessageFilter{ActiveOnly: true})
	if len(all) != 6 || all[0].Content != prompt || all[0].Parts[0].Text != prompt {
		t.Errorf("expanded: %d active messages", len(all))
	}
	verifyOK(t, s, "once", "after expanding it")
}
