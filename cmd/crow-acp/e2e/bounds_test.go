package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// testEndlessModel: under a model that streams text forever, one tool call
// with endless arguments, one endless SSE event, tool calls without end
// and endless keep-alive comments, each turn ends with an error naming its
// setting (or its bound), the process's
// peak RSS stays under 256 MiB, what was shown is stored, and the session
// takes the next prompt (issue 14, case 2). The default limits apply; the
// keep-alive case runs in a process with a 1 s request timeout.
func testEndlessModel(t *testing.T) {
	endlessTurns(t, map[string]string{"CROW_MODEL_TIMEOUT": "1m"}, []endlessKind{
		{fakemodel.EndlessText, "limits.reply_bytes"},
		{fakemodel.EndlessArguments, "limits.arguments_bytes"},
		{fakemodel.EndlessEvent, "limits.event_bytes"},
		{fakemodel.EndlessToolCalls, "a fixed bound"},
	}, 1)
	endlessTurns(t, map[string]string{"CROW_MODEL_TIMEOUT": "1s"}, []endlessKind{
		{fakemodel.EndlessKeepAlive, "requests.timeout"},
	}, 0)
}

type endlessKind struct{ endless, setting string }

// endlessTurns runs one turn per kind in one process, then a normal one, and
// checks that wantFailed replies were stored, each exactly as shown.
func endlessTurns(t *testing.T, extraEnv map[string]string, kinds []endlessKind, wantFailed int) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	for _, k := range kinds {
		m.Enqueue(fakemodel.Reply{Endless: k.endless})
	}
	m.SetFallback(fakemodel.Reply{Text: "a normal answer"})
	env, cwd := crowtest.AgentEnv(t, m.URL(), extraEnv)
	p := startACP(t, env)
	p.Init()
	sid := p.Session(cwd)
	var mu sync.Mutex
	shown := 0
	p.Watch(func(n *acp.SessionNotification) {
		mu.Lock()
		shown += len(crowtest.ChunkText(n))
		mu.Unlock()
	})
	for _, k := range kinds {
		_, err := p.Send(sid, "go "+k.endless)
		e := crowtest.ErrorOf(t, err)
		if e.Code != -32603 || !strings.Contains(e.Message, k.setting) {
			t.Fatalf("%s: want -32603 naming %s, got %+v", k.endless, k.setting, e)
		}
	}
	p.Watch(nil)
	if r := p.StopReason(sid, "again"); r != acp.StopEndTurn {
		t.Fatalf("session not usable after the limits: %s", r)
	}
	if hwm := peakRSSKiB(p.cmd.Process.Pid); hwm > 256<<10 {
		t.Fatalf("peak RSS %d KiB under endless model output", hwm)
	} else {
		t.Logf("peak RSS %d KiB", hwm)
	}
	p.exit(t)

	msgs := crowtest.Messages(t, env["CROW_DB"], sid)
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

// TestSystemPromptBounded: a client's systemPrompt is capped (issue 37 item
// 10: eight session/new requests with 24 MiB each made a 408 MB database).
// Over the limit, session/new is -32602 naming it, no session is made, and
// the frame log keeps a marker of the request, not its body; under it, the
// session is made.
func TestSystemPromptBounded(t *testing.T) {
	_, db, env, cwd := procSetup(t)
	p := startProc(t, env)
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
func testStdoutClosedMidTurn(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: strings.Repeat("word ", 400), DelayMS: 5})
	env, cwd := crowtest.AgentEnv(t, m.URL(), nil)
	c := startACP(t, env)
	c.Init()
	sid := c.Session(cwd)
	streaming := make(chan struct{})
	var once sync.Once
	c.Watch(func(n *acp.SessionNotification) {
		if strings.Contains(crowtest.ChunkText(n), "word") {
			once.Do(func() { close(streaming) })
		}
	})
	go func() { _, _ = c.Send(sid, "talk") }() // never answered: nobody reads
	select {
	case <-streaming:
	case <-time.After(20 * time.Second):
		t.Fatal("no reply streamed")
	}
	c.stdout.Close() // the client stops reading: crow-acp's next write fails
	done := make(chan error, 1)
	go func() { done <- c.wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crow-acp ended with %v after its stdout was closed\n%s", err, c.logs())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("crow-acp kept running after its stdout was closed")
	}
	msgs := crowtest.Messages(t, env["CROW_DB"], sid)
	if len(msgs) != 2 || msgs[1].Status != persistence.StatusCancelled || !strings.HasPrefix(msgs[1].Content, "word") ||
		len(msgs[1].Content) >= 2000 {
		t.Fatalf("stored after the client went: %s", describe(msgs))
	}
}

// procChildren counts the child processes of pid (Linux).
func procChildren(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil || len(tasks) == 0 {
		t.Skip("no /proc/PID/task/*/children here")
	}
	n := 0
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		n += len(strings.Fields(string(b)))
	}
	return n
}

func procFDs(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skip("no /proc/PID/fd here")
	}
	return len(fds)
}

// TestMCPServersBounded (issue 14 case 8): one process serving many
// sessions, each with a stdio MCP server, keeps at most mcp.max_servers
// server processes (and their pipes), not one per session; a server
// stopped to make room, or after mcp.idle_timeout, starts again when the
// model calls its tool, transparently.
func TestMCPServersBounded(t *testing.T) {
	server := crowtest.MCPServer(t)
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	const maxServers, sessions = 3, 10
	env := map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": filepath.Join(t.TempDir(), "crow.db"),
		"CROW_MCP_MAX_SERVERS": strconv.Itoa(maxServers), "CROW_MCP_IDLE_TIMEOUT": "1s"}
	c := startClient(t, env)
	pid := c.p.cmd.Process.Pid
	fds := procFDs(t, pid)
	mcp := `[{"name":"notes","command":` + strconv.Quote(server) + `,"args":[],"env":[]}]`

	call := func(sid string, i int) {
		t.Helper()
		model.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprint("call_", i), Name: "notes__echo",
			Arguments: fmt.Sprintf(`{"text":"n%d"}`, i)}}}, fakemodel.Reply{Text: "ok"})
		before := len(model.Requests())
		if res := c.promptAllowing(sid, "echo"); !strings.Contains(res, `"end_turn"`) {
			t.Fatalf("prompt %d: %s", i, res)
		}
		reqs := model.Requests()
		if len(reqs) != before+2 || !strings.Contains(string(reqs[len(reqs)-1]), fmt.Sprintf("echo: n%d", i)) {
			t.Fatalf("prompt %d: the tool's result did not reach the model", i)
		}
	}
	var sids []string
	for i := range sessions {
		cwd := t.TempDir()
		sid := c.newSessionWith(cwd, mcp)
		sids = append(sids, sid)
		call(sid, i)
		if n := procChildren(t, pid); n > maxServers {
			t.Fatalf("%d child processes after %d sessions, cap %d", n, i+1, maxServers)
		}
	}
	if grown := procFDs(t, pid) - fds; grown > maxServers*6 {
		t.Errorf("%d more open files after %d sessions with an MCP server (cap %d servers)", grown, sessions, maxServers)
	}
	// The first session's server was stopped long ago: it starts again.
	call(sids[0], sessions)

	// Idle servers stop: after the idle timeout no server runs; the next
	// call starts one.
	deadline := time.Now().Add(15 * time.Second)
	for procChildren(t, pid) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d MCP servers still running after their idle timeout", procChildren(t, pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
	call(sids[1], sessions+1)
	if n := procChildren(t, pid); n != 1 {
		t.Errorf("%d child processes after a call on an idle-stopped server, want 1", n)
	}
	c.p.close()
}
