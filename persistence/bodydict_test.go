package persistence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// TestBodyDict pins the dictionary: bodies stored against it read back
// only with it, byte for byte, so it may never change (a new one needs a
// prefix of its own).
func TestBodyDict(t *testing.T) {
	sum := sha256.Sum256([]byte(bodyDict))
	const want = "77e12fd82e23caf1c6873bfa4b38995a8a5b47c5371182ea098031ce89f858a0"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("bodyDict changed (sha256 %s, want %s): bodies stored against it would no longer read back", got, want)
	}
	if bodyDictS2() == nil {
		t.Fatal("S2 refuses the dictionary")
	}
}

// TestPackDict: what the dictionary is for (a turn's short records and
// frames) shrinks to less than half, and everything reads back as it was,
// through unpack as every reader does.
func TestPackDict(t *testing.T) {
	short := map[string]string{
		"prompt request": `{"id":3,"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"sess_a687feb7e75651a7e4742185dff3d300","prompt":[{"type":"text","text":"turn 0: go on with the work"}]}}`,
		"user record":    `{"id":1,"seq":1,"role":"user","content":"turn 0: go on with the work","status":"complete","tokenCount":12,"createdAt":"2026-11-27T04:20:39.76728468Z","isActive":true}`,
		"update record":  `{"id":6,"seq":6,"role":"assistant","content":,"status":"streaming","tokenCount":223,"createdAt":"2026-11-27T04:20:54.525916926Z","isActive":true,"contentFrom":5}`,
		"response":       `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`,
	}
	var plain, stored int
	for name, body := range short {
		p := packSmall([]byte(body))
		if p == nil || 10*len(p) > 6*len(body) {
			t.Errorf("%s: %d bytes stored in %d, want at most 60%%", name, len(body), len(p))
		}
		plain, stored = plain+len(body), stored+len(p)
	}
	if 2*stored > plain {
		t.Errorf("a turn's short bodies, %d bytes, stored in %d: want at most half", plain, stored)
	}
	for name, body := range map[string][]byte{
		"control and invalid UTF-8": []byte("\x00\x01\x1b[31mred\x1b[0m \xc3\x28 \xed\xa0\x80 \r\n\t" + short["response"]),
		"huge":                      bytes.Repeat([]byte(short["user record"]), 20000),
		"random":                    []byte(hex.EncodeToString(bytes.Repeat([]byte{0x9e, 0x37, 0x79, 0xb9}, 300))),
		"shortest":                  bytes.Repeat([]byte("x"), minDictBody),
		"prefix inside":             []byte(dictPrefix + packedPrefix + strings.Repeat("{", 40)),
	} {
		p := packDict(body)
		back, ok, err := unpack(p)
		if !ok || err != nil || !bytes.Equal(back, body) {
			t.Errorf("%s: unpack(packDict(%d bytes)) = %d bytes, %v, %v", name, len(body), len(back), ok, err)
		}
	}
	if p := packSmall([]byte(`{"a":1}`)); p != nil {
		t.Errorf("a body shorter than minDictBody was packed: %q", p)
	}
}

// TestUnpackDictBounds: a stored body that claims more than maxUnpacked,
// or is damaged, is an error, never an allocation of what it claims.
func TestUnpackDictBounds(t *testing.T) {
	old := maxUnpacked
	maxUnpacked = 1 << 10
	defer func() { maxUnpacked = old }()
	huge := packDict(bytes.Repeat([]byte("a"), 4<<10))
	if _, _, err := unpack(huge); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a body of 4 KiB read back under a 1 KiB bound: %v", err)
	}
	claims := append([]byte(dictPrefix), 0xff, 0xff, 0xff, 0xff, 0x0f, 'x') // 4 GiB
	if _, _, err := unpack(claims); err == nil {
		t.Error("a body claiming 4 GiB read back")
	}
	ok := packDict([]byte(strings.Repeat("ok ", 100)))
	for cut := len(dictPrefix); cut < len(ok); cut++ {
		if back, _, err := unpack(ok[:cut]); err == nil && string(back) == strings.Repeat("ok ", 100) {
			t.Fatalf("a body cut to %d of %d bytes read back whole", cut, len(ok))
		}
	}
}

// TestPackWriteFrames: every frame of a write reads back as sent: short
// ones against the dictionary, a client's line that is not JSON as it is
// (or packed, when it starts with a NUL and so could pass for a packed
// body), an outbound run as small as the best of its packings.
func TestPackWriteFrames(t *testing.T) {
	const toolCall = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call",` +
		`"toolCallId":"call_7","title":"Read main.go","kind":"read","status":"pending","locations":[{"path":"/home/me/project/main.go"}],` +
		`"rawInput":{"path":"main.go"}}}}`
	prompt := `{"id":3,"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"hello there"}]}}`
	var run []string
	for i := range 40 {
		run = append(run, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"w`+strings.Repeat("o", i%5)+`rd "},"messageId":"msg_2"}}}`)
	}
	frames := []*Event{
		{Stream: "sess_1", Kind: EventRequest, Direction: DirIn, Method: "session/prompt", Body: []byte(prompt)},
		{Stream: "sess_1", Kind: EventRequest, Direction: DirIn, Body: []byte("not json \x1b[31m \xc3\x28")},
		// Lines that are packed bodies, of other bytes.
		{Stream: "sess_1", Kind: EventRequest, Direction: DirIn, Body: packDict([]byte("a client's line that looks packed"))},
		{Stream: "sess_1", Kind: EventRequest, Direction: DirIn, Body: deflate.Pack(packedPrefix, bytes.Repeat([]byte("another "), 40))},
		{Stream: "sess_1", Kind: EventNotification, Direction: DirOut, Method: "session/update", Body: []byte(strings.Join(run, "\n"))},
		{Stream: "sess_1", Kind: EventResponse, Direction: DirOut, Body: []byte(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)},
		{Stream: "sess_1", Kind: EventNotification, Direction: DirOut, Method: "session/update", Body: []byte(toolCall)},
	}
	out := PackWrite(frames, nil)
	for i, e := range out {
		want := frames[i].Body
		if got := bytes.Join(e.Frames(), []byte("\n")); !bytes.Equal(got, want) {
			t.Errorf("frame %d reads back as %q, want %q", i, got, want)
		}
		if e.Body[0] != 0 && !bytes.Equal(e.Body, want) {
			t.Errorf("frame %d stored changed but not packed: %q", i, e.Body)
		}
	}
	if len(out[0].Body) >= len(prompt)/2 {
		t.Errorf("the prompt's request (%d bytes) stored in %d", len(prompt), len(out[0].Body))
	}
	if !bytes.Equal(out[1].Body, frames[1].Body) {
		t.Errorf("a line that is not JSON was stored as %q", out[1].Body)
	}
	if runBody := frames[4].Body; len(out[4].Body) > len(PackFrames(runBody)) {
		t.Errorf("the run is stored in %d bytes; PackFrames takes %d", len(out[4].Body), len(PackFrames(runBody)))
	}
	if n := len(out[6].Body); n > len(PackFrames([]byte(toolCall))) || 2*n > len(toolCall) {
		t.Errorf("a tool call's frame (%d bytes) is stored in %d; PackFrames takes %d", len(toolCall), n, len(PackFrames([]byte(toolCall))))
	}
}

func FuzzBodyDict(f *testing.F) {
	f.Add([]byte("control \x00\x01\x02\x1b[31m\r\n\t and invalid UTF-8 \xc3\x28 \xed\xa0\x80"))
	f.Add(bytes.Repeat([]byte(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`), 3000)) // 177 KB
	f.Add([]byte("\xff\xff\xff\xff\x0f"))
	f.Add(packDict([]byte(`{"id":1,"seq":1,"role":"user","content":"hi","status":"complete"}`))[len(dictPrefix):])
	f.Fuzz(func(t *testing.T, b []byte) {
		// Whatever a database holds after the prefix: an error or a body
		// within the bound, never a panic.
		if got, err := unpackDict(b); err == nil && len(got) > maxUnpacked {
			t.Fatalf("read back %d bytes", len(got))
		}
		e := Event{Kind: EventRequest, Direction: DirIn, Body: append([]byte(dictPrefix), b...)}
		_ = e.Frames()
		// And every body packed reads back.
		if back, ok, err := unpack(packDict(b)); !ok || err != nil || !bytes.Equal(back, b) {
			t.Fatalf("unpack(packDict(%q)) = %q, %v, %v", b, back, ok, err)
		}
	})
}
