package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// testEndlessModel: under a model that streams text forever, one tool call
// with endless arguments, one endless SSE event, tool calls without end
// and endless keep-alive comments, each turn ends with an error naming its
// setting (or its bound), the process's
// peak RSS stays under 256 MiB, what was shown is stored, and the session
// takes the next prompt (issue 14, case 2). The default limits apply; the
// keep-alive case runs in a process with a 1 s request timeout.
func testEndlessModel(t *testing.T, bin string) {
	endlessTurns(t, bin, map[string]string{"CROW_MODEL_TIMEOUT": "1m"}, []endlessKind{
		{fakemodel.EndlessText, "limits.reply_bytes"},
		{fakemodel.EndlessArguments, "limits.arguments_bytes"},
		{fakemodel.EndlessEvent, "limits.event_bytes"},
		{fakemodel.EndlessToolCalls, "a fixed bound"},
	}, 1)
	endlessTurns(t, bin, map[string]string{"CROW_MODEL_TIMEOUT": "1s"}, []endlessKind{
		{fakemodel.EndlessKeepAlive, "requests.timeout"},
	}, 0)
}

type endlessKind struct{ endless, setting string }

// endlessTurns runs one turn per kind in one process, then a normal one, and
// checks that wantFailed replies were stored, each exactly as shown.
func endlessTurns(t *testing.T, bin string, extraEnv map[string]string, kinds []endlessKind, wantFailed int) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	for _, k := range kinds {
		m.Enqueue(fakemodel.Reply{Endless: k.endless})
	}
	m.SetFallback(fakemodel.Reply{Text: "a normal answer"})
	env, cwd := robustEnv(t, m.URL(), extraEnv)
	p := startBinary(t, bin, env)
	p.initialize()
	sid := p.newSession(cwd)
	var mu sync.Mutex
	shown := 0
	p.watch(func(n *acp.SessionNotification) {
		mu.Lock()
		shown += len(chunkText(n))
		mu.Unlock()
	})
	for _, k := range kinds {
		_, err := p.prompt(sid, "go "+k.endless)
		e := errorOf(t, err)
		if e.Code != -32603 || !strings.Contains(e.Message, k.setting) {
			t.Fatalf("%s: want -32603 naming %s, got %+v", k.endless, k.setting, e)
		}
	}
	p.watch(nil)
	if r := p.stopReason(sid, "again"); r != acp.StopEndTurn {
		t.Fatalf("session not usable after the limits: %s", r)
	}
	if hwm := peakRSSKiB(p.cmd.Process.Pid); hwm > 256<<10 {
		t.Fatalf("peak RSS %d KiB under endless model output", hwm)
	} else {
		t.Logf("peak RSS %d KiB", hwm)
	}
	p.exit(t)

	msgs := storedMessages(t, env["CROW_DB"], sid)
	var failed []persistence.Message
	for _, msg := range msgs {
		if msg.Role == persistence.RoleAssistant && msg.Status == persistence.StatusFailed {
			failed = append(failed, msg)
		}
	}
	// Only endless text shows anything; it is kept, exactly as shown.
	if len(failed) != wantFailed || (wantFailed == 1 && len(failed[0].Content) != shown) {
		t.Fatalf("%d failed replies stored (want %d, of the %d bytes shown): %s", len(failed), wantFailed, shown, describe(msgs)[:min(2000, len(describe(msgs)))])
	}
}

// TestRefusedPromptLeavesOnlyAMarker: a prompt refused as too large leaves
// its size and digest in the frame log, never its body (issue 14, case 4:
// five refused 30 MiB prompts grew the database by 180 MiB).
func TestRefusedPromptLeavesOnlyAMarker(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_MAX_PROMPT_BYTES": "4096"})
	c := startInProcess(t, env)
	c.initialize()
	sid := c.newSession(cwd)
	body := strings.Repeat("refused-body ", 80<<10) // 1 MiB
	for range 5 {
		if _, err := c.prompt(sid, body); errorOf(t, err).Code != -32602 {
			t.Fatalf("want -32602, got %v", err)
		}
	}
	c.stopReason(sid, "a prompt within the limit")
	// Every frame before a response is committed: the files hold them now.
	var size int64
	for _, f := range []string{env["CROW_DB"], env["CROW_DB"] + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		size += int64(len(b))
		if bytes.Contains(b, []byte("refused-body refused-body")) {
			t.Fatalf("%s holds the body of a refused prompt", f)
		}
	}
	if size > 4<<20 {
		t.Fatalf("the database is %d bytes after five refused 1 MiB prompts", size)
	}
	evs := storedEvents(t, env["CROW_DB"], sid)
	markers, kept := 0, 0
	for _, ev := range evs {
		if ev.Method != "session/prompt" || ev.Kind != persistence.EventRequest {
			continue
		}
		var f struct {
			Omitted struct {
				Bytes  int
				SHA256 string
			}
		}
		fs, err := ev.Frames(persistence.NewBudget(persistence.MaxDecoded))
		if err != nil {
			t.Fatal(err)
		}
		frame := bytes.Join(fs, []byte("\n"))
		_ = json.Unmarshal(frame, &f)
		switch {
		case f.Omitted.Bytes > len(body) && len(f.Omitted.SHA256) == 64:
			markers++
		case strings.Contains(string(frame), "a prompt within the limit"):
			kept++
		}
	}
	if markers != 5 || kept != 1 {
		t.Fatalf("%d markers for 5 refused prompts, %d of 1 accepted prompt kept whole", markers, kept)
	}
}

// TestSystemPromptBounded: a client's systemPrompt is capped (issue 37 item
// 10: eight session/new requests with 24 MiB each made a 408 MB database).
// Over the limit, session/new is -32602 naming it, no session is made, and
// the frame log keeps a marker of the request, not its body; under it, the
// session is made.
func TestSystemPromptBounded(t *testing.T) {
	bin := testBinary(t)
	_, db, env, cwd := procSetup(t)
	p := startProc(t, bin, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	p.until("0", 10*time.Second)
	newSession := func(id int, text string) []byte {
		sp, _ := json.Marshal(map[string]any{"mode": "append", "content": []map[string]string{{"type": "text", "text": text}}})
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":%s,"mcpServers":[],"systemPrompt":%s}}`, id, quote(cwd), sp))
		frames := p.until(strconv.Itoa(id), 20*time.Second)
		return frames[len(frames)-1]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 8 {
		var big strings.Builder
		big.WriteString("refused-system-prompt ")
		for big.Len() < 2<<20 {
			fmt.Fprintf(&big, "%x", rng.Uint64()) // DEFLATE cannot shrink it much
		}
		answer := newSession(i+1, big.String())
		var e struct {
			Error *struct {
				Code    int
				Message string
				Data    struct{ Limit, Size int }
			}
		}
		mustJSON(t, answer, &e)
		if e.Error == nil || e.Error.Code != -32602 || e.Error.Data.Limit != 128<<10 || e.Error.Data.Size <= e.Error.Data.Limit ||
			!strings.Contains(e.Error.Message, "131072") {
			t.Fatalf("a 2 MiB systemPrompt: %.300s", answer)
		}
	}
	if sid := sessionIDOf(t, [][]byte{newSession(9, strings.Repeat("Answer in French. ", 1000))}); sid == "" {
		t.Fatal("no session for a systemPrompt within the limit")
	}
	p.send(`{"jsonrpc":"2.0","id":10,"method":"session/list","params":{}}`)
	p.until("10", 10*time.Second)
	p.close()
	var size int64
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		size += int64(len(b))
		if bytes.Contains(b, []byte("refused-system-prompt")) {
			t.Errorf("%s holds a refused systemPrompt", f)
		}
	}
	if size > 4<<20 {
		t.Fatalf("the database is %d bytes after eight refused 2 MiB system prompts", size)
	}
}

// testStdoutClosedMidTurn: a client that closes its end of our stdout
// mid-turn is gone: crow-acp exits cleanly (not killed by SIGPIPE), and the
// reply keeps what was streamed, marked cancelled (issue 14, case 7).
func testStdoutClosedMidTurn(t *testing.T, bin string) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: strings.Repeat("word ", 400), DelayMS: 5})
	env, cwd := robustEnv(t, m.URL(), nil)
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Env, environ(env)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := newClient(t, in, outR)
	c.initialize()
	sid := c.newSession(cwd)
	streaming := make(chan struct{})
	var once sync.Once
	c.watch(func(n *acp.SessionNotification) {
		if strings.Contains(chunkText(n), "word") {
			once.Do(func() { close(streaming) })
		}
	})
	go func() { _, _ = c.prompt(sid, "talk") }() // never answered: nobody reads
	select {
	case <-streaming:
	case <-time.After(20 * time.Second):
		t.Fatal("no reply streamed")
	}
	outR.Close() // the client stops reading: crow-acp's next write fails
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crow-acp ended with %v after its stdout was closed\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("crow-acp kept running after its stdout was closed")
	}
	msgs := storedMessages(t, env["CROW_DB"], sid)
	if len(msgs) != 2 || msgs[1].Status != persistence.StatusCancelled || !strings.HasPrefix(msgs[1].Content, "word") ||
		len(msgs[1].Content) >= 2000 {
		t.Fatalf("stored after the client went: %s", describe(msgs))
	}
}
