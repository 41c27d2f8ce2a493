package acp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// genericFrame is the frame as encoding/json writes it, through the
// unions' own MarshalJSON: the reference appendUpdateFrame must equal.
func genericFrame(n *SessionNotification) ([]byte, error) {
	return json.Marshal(wireNotification{JSONRPC: "2.0", Method: "session/update", Params: n})
}

// encodeTexts are strings that take every branch of the string encoder.
var encodeTexts = []string{
	"", "hello", "line\nbreak \"quoted\" \\ tab\t", "<html> & \u2028 \u2029 é 中文 🐦",
	"\x00\x01\x08\x0c\x1f\x7f", string([]byte{0xff, 'a', 0xc3}), "\xed\xa0\x80 surrogate", strings.Repeat("abc\"<", 3000),
}

// allUpdates returns every SessionUpdate variant, and every variant of the
// unions inside them, carrying text.
func allUpdates(text string) []SessionUpdate {
	meta := Meta(` { "a" : [1, "<b>"] } `)
	ann := json.RawMessage(`{"priority": 1, "audience": ["user"]}`)
	line, size := 7, int64(1234)
	blocks := []ContentBlock{
		TextBlock(text),
		{Text: &TextContent{Text: text, Annotations: ann, Meta: meta}},
		{Image: &ImageContent{Data: text, MimeType: "image/png"}},
		{Image: &ImageContent{Data: "aGk=", MimeType: text, URI: text, Annotations: ann, Meta: meta}},
		{Audio: &AudioContent{Data: text, MimeType: "audio/wav", Annotations: ann, Meta: meta}},
		{ResourceLink: &ResourceLink{URI: text, Name: text}},
		{ResourceLink: &ResourceLink{URI: "file:///a", Name: "a", Title: text, Description: text, MimeType: text, Size: &size, Annotations: ann, Meta: meta}},
		{Resource: &EmbeddedResource{Resource: EmbeddedResourceContents{URI: text, Text: &text}}},
		{Resource: &EmbeddedResource{Resource: EmbeddedResourceContents{URI: "u", MimeType: text, Blob: &text, Meta: meta}, Annotations: ann, Meta: meta}},
	}
	var out []SessionUpdate
	for _, b := range blocks {
		out = append(out,
			SessionUpdate{AgentMessageChunk: &ContentChunk{Content: b}},
			SessionUpdate{AgentThoughtChunk: &ContentChunk{Content: b, MessageID: text}},
			SessionUpdate{UserMessageChunk: &ContentChunk{Content: b, MessageID: "m1", Meta: meta}},
		)
	}
	old := text
	content := []ToolCallContent{
		ToolText(text),
		{Content: &ContentWrapper{Content: blocks[3], Meta: meta}},
		{Diff: &Diff{Path: text, NewText: text}},
		{Diff: &Diff{Path: "/a", OldText: &old, NewText: text, Meta: meta}},
		{Terminal: &TerminalContent{TerminalID: text}},
		{Terminal: &TerminalContent{TerminalID: "t", Meta: meta}},
	}
	locations := []ToolCallLocation{{Path: text}, {Path: "/b", Line: &line, Meta: meta}}
	raw := json.RawMessage(`{"path": "/a<b>", "n": [1, 2.5e3, true, null]}`)
	empty := ""
	out = append(out,
		SessionUpdate{ToolCall: &ToolCall{ToolCallID: text}},
		SessionUpdate{ToolCall: &ToolCall{ToolCallID: "c1", Title: text, Kind: ToolKindEdit, Status: ToolStatusPending,
			Content: content, Locations: locations, RawInput: raw, RawOutput: raw, Meta: meta}},
		SessionUpdate{ToolCallUpdate: &ToolCallUpdate{ToolCallID: text}},
		SessionUpdate{ToolCallUpdate: &ToolCallUpdate{ToolCallID: "c1", Title: text, Kind: ToolKind(text), Status: ToolCallStatus(text),
			Content: content, Locations: locations, RawInput: raw, RawOutput: raw, Meta: meta}},
		SessionUpdate{ToolCallUpdate: &ToolCallUpdate{ToolCallID: "c1", Content: []ToolCallContent{}, Locations: []ToolCallLocation{}}},
		SessionUpdate{Plan: &Plan{}},
		SessionUpdate{Plan: &Plan{Entries: []PlanEntry{{Content: text, Priority: "high", Status: "pending", Meta: meta}}, Meta: meta}},
		SessionUpdate{AvailableCommandsUpdate: &AvailableCommandsUpdate{AvailableCommands: []AvailableCommand{{Name: text, Description: text, Input: &AvailableCommandInput{Hint: text}}}}},
		SessionUpdate{CurrentModeUpdate: &CurrentModeUpdate{CurrentModeID: text}},
		SessionUpdate{ConfigOptionUpdate: &ConfigOptionUpdate{ConfigOptions: []SessionConfigOption{{ID: "m", Name: text, Type: "select", CurrentValue: text,
			Options: []SessionConfigSelectOption{{Value: text, Name: text}}}}}},
		SessionUpdate{SessionInfoUpdate: &SessionInfoUpdate{}},
		SessionUpdate{SessionInfoUpdate: &SessionInfoUpdate{Title: &text, UpdatedAt: &empty, Meta: meta}},
		SessionUpdate{UsageUpdate: &UsageUpdate{Used: 12, Size: 128000}},
		SessionUpdate{UsageUpdate: &UsageUpdate{Used: 12, Size: 128000, Cost: &Cost{Amount: 0.0123, Currency: text}, Meta: meta}},
		SessionUpdate{Other: json.RawMessage(` {"sessionUpdate": "compaction_update", "text": "<x>"} `)},
		CompactionUpdate{CompactionID: text, Status: CompactionCompleted, Summary: []ContentBlock{TextBlock(text)}, Meta: meta}.Update(),
	)
	return out
}

// TestUpdateFrameMatchesEncodingJSON: the one-pass encoder writes every
// session/update variant byte for byte as encoding/json does through the
// unions' MarshalJSON.
func TestUpdateFrameMatchesEncodingJSON(t *testing.T) {
	checked := 0
	for _, text := range encodeTexts {
		for _, u := range allUpdates(text) {
			for _, meta := range []Meta{nil, Meta(`{"x":"&"}`)} {
				n := &SessionNotification{SessionID: text, Update: u, Meta: meta}
				checkFrame(t, n)
				checked++
			}
		}
	}
	t.Logf("%d frames compared", checked)
}

func checkFrame(t *testing.T, n *SessionNotification) {
	t.Helper()
	want, werr := genericFrame(n)
	got, gerr := appendUpdateFrame([]byte("prefix"), n)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("errors differ: encoding/json %v, one pass %v\nupdate %+v", werr, gerr, n.Update)
	}
	if werr != nil {
		return
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("frames differ:\none pass     %s\nencoding/json %s", got, want)
	}
}

// TestUpdateFrameErrors: what encoding/json refuses (an empty union, a
// _meta or rawInput that is not JSON) the encoder refuses too.
func TestUpdateFrameErrors(t *testing.T) {
	for _, n := range []*SessionNotification{
		{SessionID: "s"},
		{SessionID: "s", Update: SessionUpdate{AgentMessageChunk: &ContentChunk{}}},
		{SessionID: "s", Update: SessionUpdate{ToolCall: &ToolCall{ToolCallID: "c", Content: []ToolCallContent{{}}}}},
		{SessionID: "s", Update: SessionUpdate{ToolCall: &ToolCall{ToolCallID: "c", RawInput: json.RawMessage(`{"a":`)}}},
		{SessionID: "s", Update: SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock("x"), Meta: Meta(`nope`)}}},
		{SessionID: "s", Update: SessionUpdate{Other: json.RawMessage(`{"sessionUpdate":`)}},
		{SessionID: "s", Update: SessionUpdate{Plan: &Plan{}}, Meta: Meta(`[1,`)},
	} {
		if _, err := genericFrame(n); err == nil {
			t.Fatalf("encoding/json accepts %+v", n.Update)
		}
		if _, err := appendUpdateFrame(nil, n); err == nil {
			t.Errorf("the one-pass encoder accepts %+v", n.Update)
		}
	}
}

// FuzzUpdateFrame: for any text (the model's, a file's) and any raw JSON
// (a tool's arguments, _meta), every update variant is written as
// encoding/json writes it, or refused as encoding/json refuses it.
func FuzzUpdateFrame(f *testing.F) {
	for _, s := range encodeTexts {
		f.Add(s, []byte(`{"a":"<b>"}`))
	}
	f.Add("\x00\x1f\x7f\x80\xff\ufffd\u2028", []byte("\x00\xff"))
	f.Add("ok", []byte(" [1, {\"x\" : \"\u2029&\"} ] "))
	f.Add(strings.Repeat("\xe2\x80\xa8\xf0\x9f", 1<<10), []byte(`"`+strings.Repeat(`\u00e9<`, 1<<10)+`"`))
	f.Fuzz(func(t *testing.T, text string, raw []byte) {
		old := text
		for _, u := range []SessionUpdate{
			{AgentMessageChunk: &ContentChunk{Content: TextBlock(text), MessageID: text}},
			{UserMessageChunk: &ContentChunk{Content: ContentBlock{Resource: &EmbeddedResource{Resource: EmbeddedResourceContents{URI: text, Text: &text}, Annotations: raw}}, Meta: raw}},
			{ToolCall: &ToolCall{ToolCallID: text, Title: text, Content: []ToolCallContent{ToolText(text), {Diff: &Diff{Path: text, OldText: &old, NewText: text}}},
				Locations: []ToolCallLocation{{Path: text}}, RawInput: raw, RawOutput: raw}},
			{Plan: &Plan{Entries: []PlanEntry{{Content: text}}, Meta: raw}},
			{Other: raw},
		} {
			checkFrame(t, &SessionNotification{SessionID: text, Update: u})
		}
		checkFrame(t, &SessionNotification{SessionID: text, Update: SessionUpdate{AgentThoughtChunk: &ContentChunk{Content: TextBlock(text)}}, Meta: raw})
	})
}

// BenchmarkUpdateFrame is one update with a 4,000-character text, as a load
// replays a reply, through the one-pass encoder and through encoding/json.
func BenchmarkUpdateFrame(b *testing.B) {
	text := strings.Repeat("The parser fails on empty input; fix it. ", 100)
	for _, c := range []struct {
		name string
		u    SessionUpdate
	}{
		{"message", SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock(text), MessageID: "msg_1"}}},
		{"tool", SessionUpdate{ToolCallUpdate: &ToolCallUpdate{ToolCallID: "call_1", Status: ToolStatusCompleted, Content: []ToolCallContent{ToolText(text)}}}},
	} {
		n := &SessionNotification{SessionID: "sess_0123456789abcdef", Update: c.u}
		b.Run(c.name+"/onepass", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 8192)
			for b.Loop() {
				var err error
				if buf, err = appendUpdateFrame(buf[:0], n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := genericFrame(n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSkipPlainWords: the eight-byte test agrees with plainASCII byte by
// byte, for every byte value at every position among plain bytes, and on
// words of two special bytes, whose borrows could hide one another.
func TestSkipPlainWords(t *testing.T) {
	plainWord := func(w string) bool { return skipPlainWords(w, 0) == 8 }
	want := func(w []byte) bool {
		for _, c := range w {
			if c >= 0x80 || !plainASCII[c] {
				return false
			}
		}
		return true
	}
	for c := range 256 {
		for pos := range 8 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			if got := plainWord(string(w)); got != want(w) {
				t.Errorf("plainWord(%q) = %v, want %v", w, got, !got)
			}
			for d := range 256 {
				w2 := append([]byte(nil), w...)
				w2[(pos+3)%8] = byte(d)
				if got := plainWord(string(w2)); got != want(w2) {
					t.Fatalf("plainWord(%q) = %v, want %v", w2, got, !got)
				}
			}
		}
	}
}
