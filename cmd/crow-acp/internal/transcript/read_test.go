package transcript

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// sampleDump is a small session with a compaction.
func sampleDump() *persistence.SessionDump {
	at := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	into, summary := int64(1), int64(3)
	return &persistence.SessionDump{
		Session: persistence.Session{ID: "s", Cwd: "/w", Title: "t", CreatedAt: at, UpdatedAt: at},
		Messages: []persistence.Message{
			{ID: 1, Seq: 1, Role: persistence.RoleUser, Content: "q", Status: persistence.StatusComplete, CompactedIntoID: &into, CreatedAt: at},
			{ID: 2, Seq: 2, Role: persistence.RoleAssistant, Content: "a\x1b[2J", Status: persistence.StatusComplete, CompactedIntoID: &into, CreatedAt: at},
			{ID: 3, Seq: 3, Role: persistence.RoleSummary, Content: "sum", Status: persistence.StatusComplete, IsActive: true, TokenCount: 2, TokenEncoding: "o200k_base", CreatedAt: at},
		},
		Compactions: []persistence.Compaction{{ID: 1, Policy: "summarize", CompactedIDs: []int64{1, 2}, KeptIDs: []int64{}, SummaryMessageID: &summary,
			AddedIDs: []int64{3}, MessagesBefore: 2, MessagesAfter: 1, CreatedAt: at}},
	}
}

// TestReadJSONRoundTrip: what WriteJSON writes, ReadJSON reads back as it
// was; an export from before addedIds gets them from its summary.
func TestReadJSONRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sampleDump()); err != nil {
		t.Fatal(err)
	}
	d, err := ReadJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := persistence.Digest(sampleDump())
	if got, _ := persistence.Digest(d); got != want || d.Messages[1].Content != "a\x1b[2J" {
		t.Fatalf("read back differs: %+v", d)
	}
	old := strings.Replace(b.String(), `"addedIds": [`+"\n        3\n      ],", "", 1)
	if old == b.String() {
		t.Fatal("no addedIds in the export")
	}
	if d, err := ReadJSON(strings.NewReader(old)); err != nil || len(d.Compactions[0].AddedIDs) != 1 || d.Compactions[0].AddedIDs[0] != 3 {
		t.Fatalf("older export: %v %+v", err, d)
	}
	for _, bad := range []string{`{"format":"other"}`, b.String() + "{}", `{"format":"crow-acp.session.v1","session":{"id":""}}`, "\xff\xfe"} {
		if _, err := ReadJSON(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadJSON(%.40q): no error", bad)
		}
	}
}

// FuzzReadJSON: any bytes give a whole session or an error, never a panic,
// and what is read writes back to an export that reads the same.
func FuzzReadJSON(f *testing.F) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sampleDump()); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"format":"crow-acp.session.v1","session":{"id":"x\u0000\u001b"},"messages":[{"seq":1,"content":"\ud800"}]}`))
	f.Add([]byte("{\"format\":\"crow-acp.session.v1\",\"session\":{\"id\":\"\xff\xfe\"}}"))
	f.Add(bytes.Repeat([]byte(`[`), 1<<16))
	f.Add([]byte(`{"format":"crow-acp.session.v1","session":{"id":"s"},"messages":[{"id":1,"seq":2},{"id":2,"seq":1}]}`))
	f.Add([]byte(`{"session":{"id":"s"},"messages":null,"later":{"x":[1]},"format":"crow-acp.session.v1","messages":[{"id":1,"seq":1}]}`))
	f.Add([]byte(`{"format":"crow-acp.session.v1","messages":{"id":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteJSON(&out, d); err != nil {
			t.Fatal(err)
		}
		again, err := ReadJSON(&out)
		if err != nil {
			t.Fatalf("an export of what was read does not read: %v", err)
		}
		if a, b := len(again.Messages), len(d.Messages); a != b {
			t.Fatalf("%d messages, then %d", b, a)
		}
	})
}
