package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// Robustness and security tests that need more control than a fixture:
// settings of their own, a process to watch, files to inspect.

// rpc is a minimal ACP client over a pair of pipes.
type rpc struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Reader
	frames chan []byte
	seen   bytes.Buffer // every frame read, for the secret scan
	nextID int
}

func newRPC(t *testing.T, in io.WriteCloser, out io.Reader) *rpc {
	c := &rpc{t: t, in: in, out: bufio.NewReaderSize(out, 1<<20), frames: make(chan []byte, 1024)}
	go func() {
		defer close(c.frames)
		for {
			line, err := c.out.ReadBytes('\n')
			if len(line) > 0 {
				c.frames <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *rpc) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write to agent: %v", err)
	}
}

// next returns the next frame, decoded.
func (c *rpc) next() map[string]json.RawMessage {
	c.t.Helper()
	select {
	case line, ok := <-c.frames:
		if !ok {
			c.t.Fatal("agent closed stdout")
		}
		c.seen.Write(line)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("agent wrote a non-JSON line %q", line)
		}
		return m
	case <-time.After(20 * time.Second):
		c.t.Fatal("timed out waiting for a frame")
		return nil
	}
}

// call sends a request and returns its response; notifications before it
// are passed to onUpdate (may be nil).
func (c *rpc) call(method string, params any, onUpdate func(map[string]json.RawMessage)) map[string]json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.request(id, method, params)
	return c.response(id, onUpdate)
}

func (c *rpc) request(id int, method string, params any) {
	c.t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(string(b))
}

func (c *rpc) response(id int, onUpdate func(map[string]json.RawMessage)) map[string]json.RawMessage {
	c.t.Helper()
	for {
		m := c.next()
		if string(m["id"]) == strconv.Itoa(id) {
			return m
		}
		if onUpdate != nil && m["method"] != nil {
			onUpdate(m)
		}
	}
}

func (c *rpc) result(m map[string]json.RawMessage) json.RawMessage {
	c.t.Helper()
	if m["error"] != nil {
		c.t.Fatalf("request failed: %s", m["error"])
	}
	return m["result"]
}

type rpcError struct {
	Code    int
	Message string
	Data    map[string]any
}

func (c *rpc) errorOf(m map[string]json.RawMessage) rpcError {
	c.t.Helper()
	var e rpcError
	if m["error"] == nil || json.Unmarshal(m["error"], &e) != nil {
		c.t.Fatalf("expected an error, got %v", m)
	}
	return e
}

func (c *rpc) initialize() {
	c.t.Helper()
	c.result(c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, nil))
}

func (c *rpc) newSession(cwd string) string {
	c.t.Helper()
	var s struct{ SessionID string }
	_ = json.Unmarshal(c.result(c.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, nil)), &s)
	if s.SessionID == "" {
		c.t.Fatal("no session id")
	}
	return s.SessionID
}

func textPrompt(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// chunkText returns the text of an agent_message_chunk update, or "".
func chunkText(m map[string]json.RawMessage) string {
	var n struct {
		Params struct {
			Update struct {
				SessionUpdate string
				Content       struct{ Text string }
			}
		}
	}
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &n)
	if n.Params.Update.SessionUpdate != "agent_message_chunk" {
		return ""
	}
	return n.Params.Update.Content.Text
}

// robustEnv is the environment of one in-process or binary agent.
func robustEnv(t *testing.T, modelURL string, extra map[string]string) (map[string]string, string) {
	dir := t.TempDir()
	cwd := filepath.Join(dir, "project")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"OPENAI_BASE_URL":        modelURL,
		"OPENAI_API_KEY":         "",
		"CROW_MODEL":             "robust-model",
		"CROW_DB":                filepath.Join(dir, "data", "crow.db"),
		"CROW_LOG_LEVEL":         "debug",
		"CROW_MODEL_RETRY_DELAY": "1ms",
		"XDG_CONFIG_HOME":        dir,
		"HOME":                   dir,
	}
	for k, v := range extra {
		env[k] = v
	}
	return env, cwd
}

// startInProcess runs crow-acp's run() over pipes with env.
func startInProcess(t *testing.T, env map[string]string) *rpc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), nil, stdio{in: inR, out: outW, err: io.Discard}, func(k string) string { return env[k] })
		outW.Close()
		done <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("crow-acp exited with %d", code)
			}
		case <-time.After(20 * time.Second):
			t.Error("crow-acp did not exit after stdin closed")
		}
	})
	return newRPC(t, inW, outR)
}

func TestPromptTooLargeIsRefusedAndNothingStored(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_MAX_PROMPT_BYTES": "2048"})
	c := startInProcess(t, env)
	c.initialize()
	sid := c.newSession(cwd)
	e := c.errorOf(c.call("session/prompt", textPrompt(sid, strings.Repeat("x", 4096)), nil))
	if e.Code != -32602 || !strings.Contains(e.Message, "CROW_MAX_PROMPT_BYTES") || e.Data["limit"] != float64(2048) {
		t.Fatalf("want -32602 naming the limit, got %+v", e)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("the model was called %d times for a refused prompt", n)
	}
	// Nothing was stored, and a prompt within the limit works.
	replayed := 0
	c.result(c.call("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, func(u map[string]json.RawMessage) {
		if strings.Contains(string(u["params"]), "user_message_chunk") {
			replayed++
		}
	}))
	if replayed != 0 {
		t.Fatalf("the refused prompt was stored (%d user chunks replayed)", replayed)
	}
	c.result(c.call("session/prompt", textPrompt(sid, strings.Repeat("y", 1000)), nil))
}

func TestActiveSessionsLimit(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "slow one two three", StallAfter: 1}, fakemodel.Reply{Text: "second"})
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_MAX_CONCURRENT_SESSIONS": "1"})
	c := startInProcess(t, env)
	c.initialize()
	s1, s2 := c.newSession(cwd), c.newSession(cwd)
	c.request(100, "session/prompt", textPrompt(s1, "first"))
	for chunkText(c.next()) == "" { // the first turn is streaming
	}
	e := c.errorOf(c.call("session/prompt", textPrompt(s2, "second"), nil))
	if e.Code != -32600 || !strings.Contains(e.Message, "CROW_MAX_CONCURRENT_SESSIONS") || e.Data["limit"] != float64(1) {
		t.Fatalf("want -32600 naming the limit, got %+v", e)
	}
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + s1 + `"}}`)
	if r := c.result(c.response(100, nil)); !strings.Contains(string(r), "cancelled") {
		t.Fatalf("first prompt: %s", r)
	}
	if r := c.result(c.call("session/prompt", textPrompt(s2, "second again"), nil)); !strings.Contains(string(r), "end_turn") {
		t.Fatalf("second session after the first finished: %s", r)
	}
}

func TestEndpointDownThenUp(t *testing.T) {
	// A port nobody listens on: take a free one and close it.
	m := fakemodel.Start()
	url := m.URL()
	m.Close()
	env, cwd := robustEnv(t, url, nil)
	c := startInProcess(t, env)
	c.initialize()
	sid := c.newSession(cwd)
	e := c.errorOf(c.call("session/prompt", textPrompt(sid, "anyone there?"), nil))
	if e.Code != -32603 || !strings.Contains(e.Message, "could not reach the model endpoint") ||
		e.Data["retryable"] != true || e.Data["attempts"] != float64(4) {
		t.Fatalf("want -32603 after 4 attempts saying the endpoint is unreachable, got %+v", e)
	}
	// The server keeps serving and the session keeps its prompt.
	replayed := ""
	c.result(c.call("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, func(u map[string]json.RawMessage) {
		replayed += string(u["params"])
	}))
	if !strings.Contains(replayed, "anyone there?") {
		t.Fatalf("the prompt was not kept: %s", replayed)
	}
}

func TestStalledStreamHitsIdleTimeout(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "start of an answer", StallAfter: 2}, fakemodel.Reply{Text: "fresh"})
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_MODEL_IDLE_TIMEOUT": "300ms"})
	c := startInProcess(t, env)
	c.initialize()
	sid := c.newSession(cwd)
	var shown strings.Builder
	start := time.Now()
	e := c.errorOf(c.call("session/prompt", textPrompt(sid, "go"), func(u map[string]json.RawMessage) { shown.WriteString(chunkText(u)) }))
	if e.Code != -32603 || !strings.Contains(e.Message, "sent nothing") || e.Data["partial"] != true {
		t.Fatalf("want -32603 for an idle stream with the partial reply kept, got %+v", e)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("the idle timeout did not end the stall")
	}
	if shown.String() != "start of " {
		t.Fatalf("client saw %q", shown.String())
	}
	if len(m.Requests()) != 1 {
		t.Fatalf("a stream that had shown text was retried (%d requests)", len(m.Requests()))
	}
	if r := c.result(c.call("session/prompt", textPrompt(sid, "again"), nil)); !strings.Contains(string(r), "end_turn") {
		t.Fatalf("session not usable after the timeout: %s", r)
	}
	var req struct {
		Messages []struct{ Role, Content string }
	}
	_ = json.Unmarshal(m.Requests()[1], &req)
	if n := len(req.Messages); n < 2 || req.Messages[n-2].Content != "start of " {
		t.Fatalf("the partial reply is not in the next request's context: %+v", req.Messages)
	}
}

// TestBinary drives the built binary: what a process writes to disk and how
// it ends.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := fixture.BuildBinary(t, "github.com/crow-acp/crow-acp/cmd/crow-acp")
	t.Run("secrets never written and files owner-only", func(t *testing.T) { testSecrets(t, bin) })
	t.Run("stdin closed mid-turn", func(t *testing.T) { testStdinClosedMidTurn(t, bin) })
	t.Run("oversized line keeps memory bounded", func(t *testing.T) { testOversizedLine(t, bin) })
}

type proc struct {
	*rpc
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

func startBinary(t *testing.T, bin string, env map[string]string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &proc{rpc: newRPC(t, in, out), cmd: cmd, stderr: &stderr}
}

// exit closes stdin and waits for a clean exit.
func (p *proc) exit(t *testing.T) {
	t.Helper()
	p.in.Close()
	for range p.frames { // drain
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crow-acp exited with %v\n%s", err, p.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("crow-acp did not exit after stdin closed")
	}
}

func testSecrets(t *testing.T, bin string) {
	const key = "sk-robust-7e1f9c2a4b6d8e0f"
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(
		fakemodel.Reply{Text: "hello there"},
		// Endpoints echo credentials in errors; nothing may keep them.
		fakemodel.Reply{Status: 401, Text: "invalid api key " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{RawSSE: "data: {\"error\":{\"message\":\"key " + key + " revoked\"}}\n\n"},
	)
	env, cwd := robustEnv(t, m.URL(), nil)
	env["OPENAI_API_KEY"] = key
	dir := filepath.Dir(filepath.Dir(env["CROW_DB"]))
	env["CROW_LOG_FILE"] = filepath.Join(dir, "logs", "crow.log")
	p := startBinary(t, bin, env)
	p.initialize()
	sid := p.newSession(cwd)
	p.result(p.call("session/prompt", textPrompt(sid, "hi"), nil))
	for range 3 {
		_ = p.call("session/prompt", textPrompt(sid, "again"), nil)
	}
	p.result(p.call("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil))
	p.exit(t)

	// The key was really used: every request carried it.
	hs := m.Headers()
	if len(hs) < 3 {
		t.Fatalf("only %d model requests", len(hs))
	}
	for _, h := range hs {
		if h.Get("Authorization") != "Bearer "+key {
			t.Fatalf("request without the key: Authorization %q", h.Get("Authorization"))
		}
	}
	// And nothing written during the run holds it: stdout, stderr, and
	// every file (database, WAL, log).
	check := func(where string, b []byte) {
		if bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte(key[3:])) {
			t.Errorf("the API key appears in %s", where)
		}
	}
	check("stdout", p.seen.Bytes())
	check("stderr", p.stderr.Bytes())
	files := 0
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		check(path, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	logData, err := os.ReadFile(env["CROW_LOG_FILE"])
	if err != nil || !bytes.Contains(logData, []byte("model request failed")) {
		t.Fatalf("the log file does not record the failures (err %v): the scan proves nothing", err)
	}
	if files < 2 {
		t.Fatalf("only %d files written", files)
	}

	// Owner-only: the database (and its WAL/SHM) and the log, and their
	// directories.
	for _, path := range []string{env["CROW_DB"], env["CROW_DB"] + "-wal", env["CROW_DB"] + "-shm", env["CROW_LOG_FILE"]} {
		info, err := os.Stat(path)
		if os.IsNotExist(err) && strings.HasSuffix(path, "-shm") || os.IsNotExist(err) && strings.HasSuffix(path, "-wal") {
			continue // checkpointed away on close
		}
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %o: readable by others", path, perm)
		}
	}
	for _, d := range []string{filepath.Dir(env["CROW_DB"]), filepath.Dir(env["CROW_LOG_FILE"])} {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("directory %s has mode %o", d, perm)
		}
	}
}

func testStdinClosedMidTurn(t *testing.T, bin string) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "partial answer that never ends", StallAfter: 3})
	env, cwd := robustEnv(t, m.URL(), nil)
	p := startBinary(t, bin, env)
	p.initialize()
	sid := p.newSession(cwd)
	p.request(10, "session/prompt", textPrompt(sid, "tell me"))
	var shown strings.Builder
	for shown.String() != "partial answer that " {
		shown.WriteString(chunkText(p.next()))
	}
	start := time.Now()
	p.exit(t) // stdin closes mid-turn: a clean exit
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("shutdown took %s", d)
	}

	store, err := sqlite.Open(context.Background(), env["CROW_DB"])
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	msgs, err := store.Messages(context.Background(), sid, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "tell me" || msgs[1].Content != shown.String() {
		t.Fatalf("stored after shutdown: %s", describe(msgs))
	}
	if msgs[1].Status != persistence.StatusCancelled {
		t.Fatalf("the cut reply is %q, want cancelled", msgs[1].Status)
	}
}

func describe(msgs []persistence.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n  %d %s %s %q", m.Seq, m.Role, m.Status, m.Content)
	}
	return b.String()
}

func testOversizedLine(t *testing.T, bin string) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := robustEnv(t, m.URL(), nil)
	p := startBinary(t, bin, env, "--max-line-bytes", "1048576")
	p.initialize()
	// A 256 MiB line, written in pieces: the agent must skip it, not
	// buffer it.
	const size = 256 << 20
	go func() {
		piece := bytes.Repeat([]byte("a"), 1<<20)
		_, _ = io.WriteString(p.in, `{"jsonrpc":"2.0","id":77,"method":"session/new","params":{"cwd":"`)
		for written := 0; written < size; written += len(piece) {
			if _, err := p.in.Write(piece); err != nil {
				return
			}
		}
		_, _ = io.WriteString(p.in, "\"}}\n")
	}()
	e := p.errorOf(p.next())
	if e.Code != -32600 || !strings.Contains(e.Message, "too large") {
		t.Fatalf("want -32600 too large, got %+v", e)
	}
	// Still serving.
	sid := p.newSession(cwd)
	if sid == "" {
		t.Fatal("no session after the oversized line")
	}
	if hwm := peakRSSKiB(p.cmd.Process.Pid); hwm > 100<<10 {
		t.Fatalf("peak RSS %d KiB after a %d MiB line: the line was buffered", hwm, size>>20)
	} else if hwm == 0 {
		t.Log("no /proc: peak RSS not checked")
	}
	p.exit(t)
}

// peakRSSKiB is VmHWM of a live process, 0 without /proc.
func peakRSSKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func TestDebugStats(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, _ := robustEnv(t, m.URL(), nil)
	c := startInProcess(t, env)
	c.initialize()
	var st struct {
		Goroutines     int
		HeapAllocBytes uint64
		RunningTurns   int
	}
	if err := json.Unmarshal(c.result(c.call("_crow/debug/stats", map[string]any{}, nil)), &st); err != nil {
		t.Fatal(err)
	}
	if st.Goroutines < 2 || st.HeapAllocBytes == 0 || st.RunningTurns != 0 {
		t.Fatalf("implausible stats %+v", st)
	}
}

func TestModelCallsPerTurnCap(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	// A model that never stops calling tools.
	m.SetFallback(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "", Name: "loop", Arguments: "{}"}}})
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_MAX_MODEL_CALLS": "3"})
	c := startInProcess(t, env)
	c.initialize()
	sid := c.newSession(cwd)
	r := c.result(c.call("session/prompt", textPrompt(sid, "loop forever"), nil))
	if !strings.Contains(string(r), `"max_turn_requests"`) {
		t.Fatalf("want stopReason max_turn_requests, got %s", r)
	}
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("%d model requests, want exactly the cap of 3", n)
	}
	// The session goes on.
	m.SetFallback(fakemodel.Reply{Text: "done"})
	if r := c.result(c.call("session/prompt", textPrompt(sid, "stop"), nil)); !strings.Contains(string(r), "end_turn") {
		t.Fatalf("after the cap: %s", r)
	}
}
