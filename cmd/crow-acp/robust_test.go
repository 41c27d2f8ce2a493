package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// Robustness and security tests that need more control than a fixture:
// settings of their own, a process to watch, files to inspect.

// client is crow-acp's own ACP client connection (acp.ClientConn) over a
// pair of pipes, with what these tests watch around it: every frame the
// agent wrote (for the secret scan), its answers to lines that had no id,
// and the raw input, used only for the malformed bytes a test sends on
// purpose.
type client struct {
	*acp.ClientConn
	acp.UnimplementedClient
	t  *testing.T
	in io.WriteCloser

	mu       sync.Mutex
	seen     bytes.Buffer                   // every frame read
	onUpdate func(*acp.SessionNotification) // set by watch
	stray    chan []byte                    // responses with id null
}

func newClient(t *testing.T, in io.WriteCloser, out io.Reader) *client {
	c := &client{t: t, in: in, stray: make(chan []byte, 16)}
	c.ClientConn = acp.NewClientConn(out, in, c, acp.Options{OnFrame: c.frame})
	t.Cleanup(func() { _ = c.ClientConn.Close() })
	return c
}

func (c *client) frame(dir acp.Direction, b []byte) {
	if dir != acp.Inbound {
		return
	}
	c.mu.Lock()
	c.seen.Write(b)
	c.seen.WriteByte('\n')
	c.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(b, &m) == nil && m.Method == "" && string(m.ID) == "null" {
		c.stray <- append([]byte(nil), b...)
	}
}

// SessionUpdate hands updates to the function withUpdates installed.
func (c *client) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	c.mu.Lock()
	fn := c.onUpdate
	c.mu.Unlock()
	if fn != nil {
		fn(n)
	}
	return nil
}

// watch passes every update from now on to fn (nil: none). It runs on the
// connection's read loop.
func (c *client) watch(fn func(*acp.SessionNotification)) {
	c.mu.Lock()
	c.onUpdate = fn
	c.mu.Unlock()
}

// withUpdates passes the updates that arrive while call runs to fn (they
// are all handled by the time a call returns).
func (c *client) withUpdates(fn func(*acp.SessionNotification), call func()) {
	c.watch(fn)
	defer c.watch(nil)
	call()
}

// seenFrames is every frame the agent wrote so far.
func (c *client) seenFrames() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.seen.Bytes()...)
}

// nextStray waits for the agent's answer to a line without a usable id.
func (c *client) nextStray() []byte {
	c.t.Helper()
	select {
	case b := <-c.stray:
		return b
	case <-time.After(20 * time.Second):
		c.t.Fatal("timed out waiting for the agent's answer")
		return nil
	}
}

// ctx bounds each call of a test.
func (c *client) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	c.t.Cleanup(cancel)
	return ctx
}

func (c *client) initialize() {
	c.t.Helper()
	if _, err := c.Initialize(c.ctx(), &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
}

func (c *client) newSession(cwd string) string {
	c.t.Helper()
	res, err := c.NewSession(c.ctx(), &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil || res.SessionID == "" {
		c.t.Fatalf("session/new: %+v, %v", res, err)
	}
	return res.SessionID
}

func (c *client) prompt(sid, text string) (*acp.PromptResponse, error) {
	return c.Prompt(c.ctx(), textPrompt(sid, text))
}

// stopReason runs a prompt that must succeed.
func (c *client) stopReason(sid, text string) acp.StopReason {
	c.t.Helper()
	res, err := c.prompt(sid, text)
	if err != nil {
		c.t.Fatalf("prompt %q: %v", text, err)
	}
	return res.StopReason
}

// load loads a session, passing its replay to fn (may be nil).
func (c *client) load(sid, cwd string, fn func(*acp.SessionNotification)) {
	c.t.Helper()
	var err error
	c.withUpdates(fn, func() {
		_, err = c.LoadSession(c.ctx(), &acp.LoadSessionRequest{SessionID: sid, Cwd: cwd, McpServers: []acp.McpServer{}})
	})
	if err != nil {
		c.t.Fatalf("session/load: %v", err)
	}
}

type rpcError struct {
	Code    int
	Message string
	Data    map[string]any
}

// errorOf is the JSON-RPC error a call failed with.
func errorOf(t *testing.T, err error) rpcError {
	t.Helper()
	var e *acp.Error
	if !errors.As(err, &e) {
		t.Fatalf("expected an error answer, got %v", err)
	}
	out := rpcError{Code: e.Code, Message: e.Message}
	if raw, ok := e.Data.(json.RawMessage); ok {
		_ = json.Unmarshal(raw, &out.Data)
	}
	return out
}

func textPrompt(sid, text string) *acp.PromptRequest {
	return &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}
}

// chunkText returns the text of an agent_message_chunk update, or "".
func chunkText(n *acp.SessionNotification) string {
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		return c.Content.Text.Text
	}
	return ""
}

// userText returns the text of a user_message_chunk update, or "".
func userText(n *acp.SessionNotification) string {
	if c := n.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
		return c.Content.Text.Text
	}
	return ""
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
func startInProcess(t *testing.T, env map[string]string) *client {
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
	return newClient(t, inW, outR)
}

func TestPromptTooLargeIsRefusedAndNothingStored(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_MAX_PROMPT_BYTES": "2048"})
	c := startInProcess(t, env)
	c.initialize()
	sid := c.newSession(cwd)
	_, err := c.prompt(sid, strings.Repeat("x", 4096))
	e := errorOf(t, err)
	if e.Code != -32602 || !strings.Contains(e.Message, "CROW_MAX_PROMPT_BYTES") || e.Data["limit"] != float64(2048) {
		t.Fatalf("want -32602 naming the limit, got %+v", e)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("the model was called %d times for a refused prompt", n)
	}
	// Nothing was stored, and a prompt within the limit works.
	replayed := 0
	c.load(sid, cwd, func(n *acp.SessionNotification) {
		if n.Update.UserMessageChunk != nil {
			replayed++
		}
	})
	if replayed != 0 {
		t.Fatalf("the refused prompt was stored (%d user chunks replayed)", replayed)
	}
	c.stopReason(sid, strings.Repeat("y", 1000))
}

func TestActiveSessionsLimit(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "slow one two three", StallAfter: 1}, fakemodel.Reply{Text: "second"})
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_MAX_CONCURRENT_SESSIONS": "1"})
	c := startInProcess(t, env)
	c.initialize()
	s1, s2 := c.newSession(cwd), c.newSession(cwd)
	streaming := make(chan struct{})
	var once sync.Once
	c.watch(func(n *acp.SessionNotification) {
		if chunkText(n) != "" {
			once.Do(func() { close(streaming) })
		}
	})
	first := make(chan *acp.PromptResponse, 1)
	go func() {
		res, err := c.prompt(s1, "first")
		if err != nil {
			t.Errorf("first prompt: %v", err)
		}
		first <- res
	}()
	<-streaming // the first turn is streaming
	_, err := c.prompt(s2, "second")
	e := errorOf(t, err)
	if e.Code != -32600 || !strings.Contains(e.Message, "CROW_MAX_CONCURRENT_SESSIONS") || e.Data["limit"] != float64(1) {
		t.Fatalf("want -32600 naming the limit, got %+v", e)
	}
	if err := c.Cancel(c.ctx(), &acp.CancelNotification{SessionID: s1}); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r == nil || r.StopReason != acp.StopCancelled {
		t.Fatalf("first prompt: %+v", r)
	}
	if r := c.stopReason(s2, "second again"); r != acp.StopEndTurn {
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
	_, err := c.prompt(sid, "anyone there?")
	e := errorOf(t, err)
	if e.Code != -32603 || !strings.Contains(e.Message, "could not reach the model endpoint") ||
		e.Data["retryable"] != true || !strings.Contains(e.Message, "after 4 attempts") {
		t.Fatalf("want -32603 after 4 attempts saying the endpoint is unreachable, got %+v", e)
	}
	// The server keeps serving and the session keeps its prompt.
	replayed := ""
	c.load(sid, cwd, func(n *acp.SessionNotification) { replayed += userText(n) })
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
	var err error
	c.withUpdates(func(n *acp.SessionNotification) { shown.WriteString(chunkText(n)) }, func() { _, err = c.prompt(sid, "go") })
	e := errorOf(t, err)
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
	if r := c.stopReason(sid, "again"); r != acp.StopEndTurn {
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
	bin := testBinary(t)
	t.Run("secrets never written and files owner-only", func(t *testing.T) { testSecrets(t, bin) })
	t.Run("stdin closed mid-turn", func(t *testing.T) { testStdinClosedMidTurn(t, bin) })
	t.Run("oversized line keeps memory bounded", func(t *testing.T) { testOversizedLine(t, bin) })
	t.Run("stdout closed mid-turn", func(t *testing.T) { testStdoutClosedMidTurn(t, bin) })
	t.Run("endless model output keeps memory bounded", func(t *testing.T) { testEndlessModel(t, bin) })
}

type proc struct {
	*client
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

func startBinary(t *testing.T, bin string, env map[string]string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Env, environ(env)...)
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
	return &proc{client: newClient(t, in, out), cmd: cmd, stderr: &stderr}
}

// exit closes stdin and waits for a clean exit.
func (p *proc) exit(t *testing.T) {
	t.Helper()
	p.in.Close()
	<-p.Done() // drained: the agent closed its output
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
	p.stopReason(sid, "hi")
	for range 3 {
		_, _ = p.prompt(sid, "again")
	}
	// MCP servers' env values and headers are credentials too (issue 13
	// case 5): the frame log, the session and its export keep only masks.
	const mcpEnv, mcpHdr = "mcp-env-secret-7070", "mcp-hdr-secret-8080"
	servers := []acp.McpServer{
		{Name: "tok", Command: "/nonexistent/mcp-server", Args: []string{}, Env: []acp.EnvVariable{{Name: "GH_TOKEN", Value: mcpEnv}}},
		{Type: "http", Name: "api", URL: "http://127.0.0.1:1/mcp", Headers: []acp.HTTPHeader{{Name: "Authorization", Value: "Bearer " + mcpHdr}}},
	}
	p.withUpdates(nil, func() {
		if _, err := p.LoadSession(p.ctx(), &acp.LoadSessionRequest{SessionID: sid, Cwd: cwd, McpServers: servers}); err != nil {
			t.Fatalf("session/load: %v", err)
		}
	})
	p.exit(t)
	export, err := exec.Command(bin, "sessions", "export", sid, "--format", "json", "--db", env["CROW_DB"]).CombinedOutput()
	if err != nil || !bytes.Contains(export, []byte(sid)) {
		t.Fatalf("export: %v\n%s", err, export)
	}
	migrated := filepath.Join(dir, "copy", "crow.db")
	if out, err := exec.Command(bin, "migrate", "--from", env["CROW_DB"], "--to", migrated).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}

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
		for _, s := range []string{mcpEnv, mcpHdr} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("an MCP server's credential appears in %s", where)
			}
		}
	}
	check("the export", export)
	if !bytes.Contains(export, []byte("GH_TOKEN")) {
		t.Errorf("the export lost the MCP server's structure:\n%.2000s", export)
	}
	check("stdout", p.seenFrames())
	check("stderr", p.stderr.Bytes())
	files := 0
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
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
	var shown strings.Builder
	partial := make(chan struct{})
	p.watch(func(n *acp.SessionNotification) {
		if shown.WriteString(chunkText(n)); shown.String() == "partial answer that " {
			close(partial)
		}
	})
	go func() { _, _ = p.prompt(sid, "tell me") }() // never answered: stdin closes first
	<-partial
	start := time.Now()
	p.exit(t) // stdin closes mid-turn: a clean exit
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("shutdown took %s", d)
	}

	msgs := storedMessages(t, env["CROW_DB"], sid)
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
	var answer struct{ Error rpcError }
	if err := json.Unmarshal(p.nextStray(), &answer); err != nil {
		t.Fatal(err)
	}
	if e := answer.Error; e.Code != -32600 || !strings.Contains(e.Message, "too large") {
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
	if err := c.Call(c.ctx(), "_crow/debug/stats", struct{}{}, &st); err != nil {
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
	if r := c.stopReason(sid, "loop forever"); r != acp.StopMaxTurnRequests {
		t.Fatalf("want stopReason max_turn_requests, got %s", r)
	}
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("%d model requests, want exactly the cap of 3", n)
	}
	// The session goes on.
	m.SetFallback(fakemodel.Reply{Text: "done"})
	if r := c.stopReason(sid, "stop"); r != acp.StopEndTurn {
		t.Fatalf("after the cap: %s", r)
	}
}
