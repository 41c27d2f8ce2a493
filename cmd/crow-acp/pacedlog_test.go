package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/journal"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestPacedReplyFrameLog streams a reply of ~24 KB at a pace that makes
// the agent save it several times (every 4 KB once 100 ms have passed),
// with text JSON escapes differently in places (<, >, &, quotes, control
// characters, non-ASCII). Each run of frames is then committed with a save
// and stored packed, and the frame log still gives back every update the
// client received, byte for byte, in order; the runs cost less than the
// text they carried.
func TestPacedReplyFrameLog(t *testing.T) {
	onBothStores(t, testPacedReplyFrameLog)
}

func testPacedReplyFrameLog(t *testing.T, dsn string) {
	bin := testBinary(t)
	model, db, env, cwd := procSetupOn(t, dsn)
	var text strings.Builder
	for i := 0; text.Len() < 24_000; i++ {
		text.WriteString(persistencetest.Prose(uint64(i), 400))
		text.WriteString(" <b>a & b</b> \"quoted\"\n\tnaïve café ü 😀 \x01\u2028 ")
	}
	model.SetFallback(fakemodel.Reply{Text: text.String(), Chunks: 240, DelayMS: 3})

	p := startProc(t, bin, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	p.until("0", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	sid := sessionIDOf(t, p.until("1", 10*time.Second))
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"go"}]}}`)
	var sent [][]byte // the session's updates as the client read them
	for _, f := range p.until("2", 30*time.Second) {
		if bytes.Contains(f, []byte(`"method":"session/update"`)) {
			sent = append(sent, f)
		}
	}
	p.close()

	evs := storedEvents(t, db, sid)
	logged, err := journal.Frames(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for _, f := range logged {
		if f.Direction == persistence.DirOut && bytes.Contains(f.Body, []byte(`"method":"session/update"`)) {
			got = append(got, f.Body)
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("the log holds %d updates, the client read %d", len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("update %d: logged %.300q, sent %.300q", i, got[i], sent[i])
		}
	}
	packed, runBytes := 0, 0
	for _, e := range evs {
		if e.Method == "session/update" && bytes.HasPrefix(e.Body, []byte{0}) {
			packed++
			runBytes += len(e.Body)
		}
	}
	if packed < 3 {
		t.Fatalf("%d runs stored packed, want one per save (several)", packed)
	}
	if runBytes > text.Len() {
		t.Errorf("the packed runs take %d bytes for %d bytes of text", runBytes, text.Len())
	}
	t.Logf("%d updates, %d packed runs, %d bytes for %d of text", len(sent), packed, runBytes, text.Len())
}
