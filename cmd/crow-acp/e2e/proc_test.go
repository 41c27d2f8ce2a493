package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

// process is one crow-acp process started over pipes, its stderr kept.
type process struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr syncbuf.Buffer

	waitOnce sync.Once
	waitErr  error
}

// spawn starts crow-acp (command) with vars and args over pipes; it is
// killed at cleanup. startProc and startACP read what it writes.
func spawn(t testing.TB, vars map[string]string, args ...string) *process {
	t.Helper()
	p := &process{t: t, cmd: command(t, vars, args...)}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = p.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.wait() })
	return p
}

// wait waits for the process to exit (once: any caller gets the result).
func (p *process) wait() error {
	p.waitOnce.Do(func() { p.waitErr = p.cmd.Wait() })
	return p.waitErr
}

// logs is what the process wrote to stderr so far.
func (p *process) logs() string { return p.stderr.String() }

// proc is crow-acp driven line by line, for tests that need the raw
// bytes or a kill -9.
type proc struct {
	*process
	lines  chan []byte
	waited chan error
}

func startProc(t testing.TB, vars map[string]string, args ...string) *proc {
	t.Helper()
	p := &proc{process: spawn(t, vars, args...), lines: make(chan []byte, 4096), waited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(p.stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
		p.waited <- p.wait()
	}()
	t.Cleanup(p.kill)
	return p
}

func (p *proc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// recv returns the next frame, failing after timeout.
func (p *proc) recv(timeout time.Duration) []byte {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("agent exited; stderr:\n%s", p.logs())
		}
		return l
	case <-time.After(timeout):
		p.t.Fatalf("no frame within %s; stderr:\n%s", timeout, p.logs())
	}
	return nil
}

// until reads frames until one is the response with this id (as JSON
// text), returning every frame read.
func (p *proc) until(id string, timeout time.Duration) [][]byte {
	p.t.Helper()
	var got [][]byte
	deadline := time.Now().Add(timeout)
	for {
		f := p.recv(time.Until(deadline))
		got = append(got, f)
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(f, &env) == nil && env.Method == "" && string(env.ID) == id {
			return got
		}
	}
}

// close ends stdin and waits for a clean exit.
func (p *proc) close() {
	p.t.Helper()
	p.stdin.Close()
	for range p.lines {
	}
	select {
	case err := <-p.waited:
		if err != nil {
			p.t.Fatalf("agent exit: %v; stderr:\n%s", err, p.logs())
		}
	case <-time.After(10 * time.Second):
		p.t.Fatal("agent did not exit")
	}
}

// kill sends SIGKILL and reaps the process.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	for range p.lines {
	}
}

// client numbers the requests it sends over a proc and waits for their
// responses.
type client struct {
	t  *testing.T
	p  *proc
	id int
}

// startClient starts crow-acp with env and initializes it.
func startClient(t *testing.T, env map[string]string) *client {
	c := &client{t: t, p: startProc(t, env)}
	c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	return c
}

// call sends a request and returns its response frame.
func (c *client) call(method, params string) string {
	c.t.Helper()
	c.id++
	id := strconv.Itoa(c.id)
	c.p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	frames := c.p.until(id, 10*time.Second)
	return string(frames[len(frames)-1])
}

func (c *client) prompt(sid, text string) string {
	return c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"`+text+`"}]}`)
}

func (c *client) load(sid, cwd string) string {
	return c.call("session/load", `{"sessionId":"`+sid+`","cwd":`+strconv.Quote(cwd)+`,"mcpServers":[]}`)
}

// newSession creates a session and returns its id.
func (c *client) newSession(cwd string) string {
	c.t.Helper()
	return c.newSessionWith(cwd, "[]")
}

// newSessionWith creates a session with these MCP servers (JSON).
func (c *client) newSessionWith(cwd, mcpServers string) string {
	c.t.Helper()
	res := c.call("session/new", `{"cwd":`+strconv.Quote(cwd)+`,"mcpServers":`+mcpServers+`}`)
	var created struct {
		Result struct{ SessionID string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(res), &created); err != nil || created.Result.SessionID == "" {
		c.t.Fatalf("session/new: %s", res)
	}
	return created.Result.SessionID
}

// startPrompt sends a prompt without waiting; it returns the request id.
func (c *client) startPrompt(sid, text string) string {
	c.id++
	id := strconv.Itoa(c.id)
	c.p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + text + `"}]}}`)
	return id
}

// firstChunk waits for the first streamed reply chunk of a running turn.
func (c *client) firstChunk() {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if strings.Contains(string(c.p.recv(time.Until(deadline))), `"agent_message_chunk"`) {
			return
		}
	}
}

// promptAllowing sends a prompt and answers every permission request with
// allow_once until the prompt's response, which it returns.
func (c *client) promptAllowing(sid, text string) string {
	c.t.Helper()
	id := c.startPrompt(sid, text)
	deadline := time.Now().Add(30 * time.Second)
	for {
		f := c.p.recv(time.Until(deadline))
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(f, &env)
		switch {
		case env.Method == "session/request_permission":
			c.p.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`)
		case env.Method == "" && string(env.ID) == id:
			return string(f)
		}
	}
}

// acpProc is crow-acp driven through crow-acp's own ACP client
// (crowtest.Client).
type acpProc struct {
	*crowtest.Client
	*process
}

func startACP(t testing.TB, vars map[string]string, args ...string) *acpProc {
	t.Helper()
	p := spawn(t, vars, args...)
	return &acpProc{Client: crowtest.NewClient(t, p.stdin, p.stdout), process: p}
}

// exit closes stdin and waits for a clean exit.
func (p *acpProc) exit(t testing.TB) {
	t.Helper()
	p.stdin.Close()
	<-p.Done() // drained: the agent closed its output
	done := make(chan error, 1)
	go func() { done <- p.wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crow-acp exited with %v\n%s", err, p.logs())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("crow-acp did not exit after stdin closed")
	}
}

// sessionIDOf is the sessionId of the session/new response that ends
// frames.
func sessionIDOf(t testing.TB, frames [][]byte) string {
	t.Helper()
	var r struct {
		Result struct{ SessionID string } `json:"result"`
	}
	if err := json.Unmarshal(frames[len(frames)-1], &r); err != nil || r.Result.SessionID == "" {
		t.Fatalf("session/new: %s", frames[len(frames)-1])
	}
	return r.Result.SessionID
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// errorCode is the frame's error code; 0 for a result.
func errorCode(t testing.TB, frame []byte) int {
	t.Helper()
	var f struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	mustJSON(t, frame, &f)
	if f.Error == nil {
		return 0
	}
	return f.Error.Code
}
