package persistence

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// messageRecordJSON is the record the store writes of a message with
// content, appended at from.
func messageRecordJSON(t testing.TB, content string, from int) []byte {
	var parts []Part
	if from%2 == 1 { // a prompt's parts, its content again
		parts = []Part{{Type: "text", Text: content}}
	}
	r := MessageRecord{ID: 7, Seq: 3, Role: RoleAssistant, Content: content, Parts: parts, Reasoning: "thinking",
		Status: StatusComplete, Meta: json.RawMessage(`{"content":"not this one","contentFrom":99}`), TokenCount: 12,
		CreatedAt: time.Unix(1700000000, 5).UTC(), IsActive: true, ContentFrom: from, ReasoningFrom: from % 3}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTextRecord: a message record with long content is stored with the
// text outside its JSON, compressed, and gives back its JSON byte for byte
// and its text; short content, and text JSON would change (invalid UTF-8),
// are left to PackRecord.
func TestTextRecord(t *testing.T) {
	long := strings.Repeat("a reply with \"quotes\", <tags> & ampersands, \u2028 separators, é, \x00 NUL, \t tabs\n", 40)
	for _, c := range []struct {
		what    string
		content string
		from    int
		stored  bool
	}{
		{"long text", long, 0, true},
		{"long text appended", long, 123, true},
		{"short text", "short", 0, false},
		{"invalid UTF-8", long + "\xff", 0, false},
		{"just below the bound", strings.Repeat("x", MinTextRecord-1), 0, false},
		{"at the bound", strings.Repeat("x", MinTextRecord), 0, true},
	} {
		rec := messageRecordJSON(t, c.content, c.from)
		body := packTextRecord(rec)
		if (body != nil) != c.stored {
			t.Errorf("%s: stored outside the JSON = %v, want %v", c.what, body != nil, c.stored)
			continue
		}
		if body == nil {
			continue
		}
		if len(c.content) > 1000 && len(body) > len(rec)/4 { // the text repeats: compressed, it is small
			t.Errorf("%s: %d bytes stored for a record of %d", c.what, len(body), len(rec))
		}
		e := Event{Kind: EventMessageUpdated, Body: body}
		back, err := e.Record()
		if err != nil || !bytes.Equal(back, rec) {
			t.Errorf("%s: Record() = %q, %v\nwant %q", c.what, back, err, rec)
		}
		text, from, err := RecordText(body)
		if err != nil || text != c.content || from != c.from {
			t.Errorf("%s: RecordText = %d bytes, %d, %v; want %d bytes, %d", c.what, len(text), from, err, len(c.content), c.from)
		}
		// The plain record reads the same way.
		if text, from, err := RecordText(PackRecord(rec)); err != nil || text != c.content || from != c.from {
			t.Errorf("%s: RecordText of the JSON = %d bytes, %d, %v", c.what, len(text), from, err)
		}
	}
}

// TestPackWriteStoresTextOnce: PackWrite stores a message record's long
// content outside its JSON, and a run of frames committed with it is still
// packed against that JSON (the text once in the write, not twice).
func TestPackWriteStoresTextOnce(t *testing.T) {
	text := strings.Repeat("the reply streamed a token at a time, ", 60)
	var run []string
	for i := 0; i < len(text); i += 4 {
		chunk, _ := json.Marshal(text[i:min(i+4, len(text))])
		run = append(run, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":`+string(chunk)+`}}}}`)
	}
	frames := &Event{Stream: "s", Seq: 1, Kind: EventNotification, Direction: DirOut, Body: []byte(strings.Join(run, "\n"))}
	rec := &Event{Stream: "s", Kind: EventMessageUpdated, Body: messageRecordJSON(t, text, 0)}
	out := PackWrite([]*Event{frames}, []*Event{rec})
	if !bytes.HasPrefix(out[1].Body, []byte(textPrefix)) {
		t.Fatalf("the record was stored as %.20q, want its text outside the JSON", out[1].Body)
	}
	if _, ok := out[0].PackedAgainst(); !ok {
		t.Fatalf("the run was not packed against the record: %.20q", out[0].Body)
	}
	if total := len(out[0].Body) + len(out[1].Body); total > len(text)/2 {
		t.Errorf("the write stores %d bytes for %d of text", total, len(text))
	}
	evs := []Event{*out[0], *out[1]}
	evs[1].Seq = 2
	got, err := FramesAt(evs, 0)
	if err != nil || string(bytes.Join(got, []byte("\n"))) != string(frames.Body) {
		t.Fatalf("frames read back: %v", err)
	}
}

// FuzzTextRecord: any body behind the text prefix reads back as an error
// or bounded text, never a panic; any content round-trips exactly.
func FuzzTextRecord(f *testing.F) {
	f.Add([]byte("control \x00\x01\x02\x1b[31m\r\n\t and invalid UTF-8 \xc3\x28 \xed\xa0\x80"))
	f.Add([]byte(strings.Repeat("huge text that repeats ", 6000))) // 138 KB: more than a huff0 block
	f.Add([]byte("\x05\x00\x04ab"))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"))
	f.Add(packTextRecord(messageRecordJSON(f, strings.Repeat("a stored text ", 40), 3))[len(textPrefix):])
	f.Fuzz(func(t *testing.T, b []byte) {
		body := append([]byte(textPrefix), b...)
		e := Event{Kind: EventMessageAppended, Body: body}
		if got, err := e.Record(); err == nil && len(got) > 2*maxUnpacked {
			t.Fatalf("read back %d bytes", len(got))
		}
		text, from, err := RecordText(body)
		if err == nil && len(text) > maxUnpacked {
			t.Fatalf("text of %d bytes", len(text))
		}
		if got := RecordTexts([][]byte{body}); (got[0].Err == nil) != (err == nil) || got[0].Text != text || got[0].From != from {
			t.Fatalf("RecordTexts = %+v, RecordText = %q, %d, %v", got[0], text, from, err)
		}
		rec := messageRecordJSON(t, string(b), len(b)%7)
		packed := packTextRecord(rec)
		if packed == nil {
			return
		}
		e.Body = packed
		if back, err := e.Record(); err != nil || !bytes.Equal(back, rec) {
			t.Fatalf("Record() = %q, %v; want %q", back, err, rec)
		}
		if text, from, err := RecordText(packed); err != nil || text != string(b) || from != len(b)%7 {
			t.Fatalf("RecordText = %q, %d, %v", text, from, err)
		}
	})
}

// TestTextRecordPartsOnce: a prompt whose parts are its content (the
// record holds the text twice in its JSON) stores the text once.
func TestTextRecordPartsOnce(t *testing.T) {
	words := strings.Fields("the agent reads a file and edits one function then runs tests again until they pass or it asks")
	var b strings.Builder
	for i := uint32(1); b.Len() < 3000; i = i*1664525 + 1013904223 {
		b.WriteString(words[i>>27%uint32(len(words))] + " ")
	}
	text := b.String()
	plain := packTextRecord(messageRecordJSON(t, text, 2))
	withParts := messageRecordJSON(t, text, 3) // parts: the text again
	packed := packTextRecord(withParts)
	if len(packed) > len(plain)+64 {
		t.Errorf("with its parts the record takes %d bytes, without %d: the text is stored twice", len(packed), len(plain))
	}
	e := Event{Kind: EventMessageAppended, Body: packed}
	if back, err := e.Record(); err != nil || !bytes.Equal(back, withParts) {
		t.Errorf("Record() = %q, %v", back, err)
	}
}
