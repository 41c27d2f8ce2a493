// Command crow-demo shows crow-acp working, offline: it starts the fake
// OpenAI-compatible model in-process, runs the real crow-acp binary over real
// pipes the way an editor does, and prints a readable transcript of a
// session that streams, survives a restart, is loaded and continued, and is
// then listed with `crow-acp sessions list`.
//
//	crow-demo -bin bin/crow-acp      (what `make demo` runs)
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

func main() {
	bin := flag.String("bin", "bin/crow-acp", "the crow-acp binary to run")
	keep := flag.Bool("keep", false, "keep the demo's temporary directory (database, log)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *bin, os.Stdout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "crow-demo:", err)
		os.Exit(1)
	}
}

// demo holds what the steps share.
type demo struct {
	bin   string
	out   io.Writer
	dir   string // temporary root
	cwd   string // the session's project directory
	env   []string
	model *fakemodel.Server
}

func run(ctx context.Context, bin string, out io.Writer, keep bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: %w (run make build first)", bin, err)
	}
	dir, err := os.MkdirTemp("", "crow-demo-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintf(out, "\n(kept %s)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	d := &demo{bin: bin, out: out, dir: dir, cwd: filepath.Join(dir, "project")}
	if err := os.MkdirAll(d.cwd, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.cwd, "README.md"), []byte("# hello\nA tiny project.\n"), 0o644); err != nil {
		return err
	}

	d.model = fakemodel.Start()
	defer d.model.Close()
	d.model.Enqueue(script...)
	d.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), // no personal config.toml
		"CROW_DB=" + filepath.Join(dir, "crow.db"),
		"CROW_LOG_FILE=" + filepath.Join(dir, "crow-acp.log"),
		"OPENAI_BASE_URL=" + d.model.URL(),
		"CROW_MODEL=" + fakemodel.ModelID,
	}

	d.heading("crow-acp demo — offline, against a scripted OpenAI-compatible model")
	d.say("model endpoint  %s (fake, scripted, on the loopback)", d.model.URL())
	d.say("database        %s", filepath.Join(dir, "crow.db"))
	d.say("project         %s", d.cwd)

	// 1. A new session; the reply streams.
	d.heading("1. An editor starts crow-acp and opens a session")
	a, err := d.start(ctx)
	if err != nil {
		return err
	}
	if err := a.initialize(); err != nil {
		return err
	}
	var created acp.NewSessionResponse
	if err := a.call("session/new", acp.NewSessionRequest{Cwd: d.cwd, McpServers: []acp.McpServer{}}, &created); err != nil {
		return err
	}
	sid := created.SessionID
	d.say("→ session/new            ← %s", sid)
	if err := a.prompt(sid, firstPrompt); err != nil {
		return err
	}

	// 2. The process goes away; the session does not.
	d.heading("2. The editor quits: crow-acp exits; everything is already stored")
	if err := a.stop(); err != nil {
		return err
	}

	d.heading("3. A new crow-acp process loads the session and continues it")
	a, err = d.start(ctx)
	if err != nil {
		return err
	}
	if err := a.initialize(); err != nil {
		return err
	}
	a.replaying = true
	if err := a.call("session/load", acp.LoadSessionRequest{SessionID: sid, Cwd: d.cwd, McpServers: []acp.McpServer{}}, &acp.LoadSessionResponse{}); err != nil {
		return err
	}
	a.replaying = false
	d.say("→ session/load %s", sid)
	for _, line := range a.replayed {
		d.say("    replayed  %s", line)
	}
	d.say("  ← loaded: the whole conversation came back before the response")
	before := len(d.model.Requests())
	if err := a.prompt(sid, secondPrompt); err != nil {
		return err
	}
	reqs := d.model.Requests()
	if len(reqs) <= before {
		return errors.New("the continued prompt never reached the model")
	}
	last := reqs[len(reqs)-1]
	if !bytes.Contains(last, []byte(firstPrompt)) {
		return errors.New("after the restart the model did not receive the earlier conversation")
	}
	d.say("  the model's request held the conversation from before the restart (%d messages), rebuilt from the database", countMessages(last))
	if err := a.stop(); err != nil {
		return err
	}

	// 4. The same sessions from the terminal.
	d.heading("4. From a shell: crow-acp sessions list")
	list := exec.CommandContext(ctx, d.bin, "sessions", "list")
	list.Env, list.Dir = d.env, d.cwd
	text, err := list.CombinedOutput()
	if err != nil {
		return fmt.Errorf("sessions list: %v\n%s", err, text)
	}
	d.say("$ crow-acp sessions list")
	for _, line := range strings.Split(strings.TrimRight(string(text), "\n"), "\n") {
		d.say("  %s", line)
	}
	if !strings.Contains(string(text), sid) {
		return fmt.Errorf("sessions list does not show %s", sid)
	}
	d.heading("Done: crow-acp sessions show " + sid + " prints the whole conversation")
	return nil
}

const (
	firstPrompt  = "What does this project do?"
	secondPrompt = "And what did I ask you before the restart?"
)

// script is what the fake model answers, in order. Each word arrives 40 ms
// after the previous one so that the streaming is visible.
var script = []fakemodel.Reply{
	{Text: "It is a tiny project: its README says \"A tiny project.\" and nothing else yet.", DelayMS: 40},
	{Text: "You asked: \"" + firstPrompt + "\" — I still have our whole conversation.", DelayMS: 40},
}

func countMessages(req []byte) int {
	var r struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(req, &r)
	return len(r.Messages)
}

func (d *demo) heading(s string) {
	fmt.Fprintf(d.out, "\n━━ %s\n", s)
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

// agentProc is one crow-acp process and the ACP client talking to it.
type agentProc struct {
	d     *demo
	cmd   *exec.Cmd
	conn  *jsonrpc2.Conn
	stdin io.WriteCloser

	mu        sync.Mutex
	replaying bool
	replayed  []string
	chunks    int
	midLine   bool
}

func (d *demo) start(ctx context.Context) (*agentProc, error) {
	cmd := exec.CommandContext(ctx, d.bin, "serve")
	cmd.Env, cmd.Dir = d.env, d.dir
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &agentProc{d: d, cmd: cmd, stdin: stdin}
	a.conn = jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(readWriteCloser{bufio.NewReader(stdout), stdin}), a)
	d.say("$ crow-acp serve        (pid %d, ACP over its stdin/stdout)", cmd.Process.Pid)
	return a, nil
}

func (a *agentProc) initialize() error {
	var res acp.InitializeResponse
	if err := a.call("initialize", acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion,
		ClientInfo: &acp.Implementation{Name: "crow-demo", Version: "1"}}, &res); err != nil {
		return err
	}
	name := "?"
	if res.AgentInfo != nil {
		name = res.AgentInfo.Name + " " + res.AgentInfo.Version
	}
	a.d.say("→ initialize             ← protocol %d, %s, loadSession=%v", res.ProtocolVersion, name, res.AgentCapabilities.LoadSession)
	return nil
}

func (a *agentProc) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.conn.Call(ctx, method, params, result); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// prompt sends one prompt and prints the reply as it streams.
func (a *agentProc) prompt(sid, text string) error {
	a.d.say("→ session/prompt         %q", text)
	a.mu.Lock()
	a.chunks = 0
	a.midLine = false
	a.mu.Unlock()
	fmt.Fprint(a.d.out, "  assistant: ")
	var res acp.PromptResponse
	err := a.call("session/prompt", acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}, &res)
	a.mu.Lock()
	n := a.chunks
	a.mu.Unlock()
	fmt.Fprintln(a.d.out)
	if err != nil {
		return err
	}
	a.d.say("  ← stopReason %q after %d streamed chunks", res.StopReason, n)
	return nil
}

// stop closes stdin, as an editor does when it quits, and waits.
func (a *agentProc) stop() error {
	pid := a.cmd.Process.Pid
	a.stdin.Close()
	a.conn.Close()
	if err := a.cmd.Wait(); err != nil {
		return fmt.Errorf("crow-acp (pid %d) exited with %v", pid, err)
	}
	a.d.say("  crow-acp (pid %d) exited cleanly after its stdin closed", pid)
	return nil
}

// Handle renders what the agent sends.
func (a *agentProc) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Method != "session/update" || req.Params == nil {
		if !req.Notif {
			_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: acp.CodeMethodNotFound, Message: "not supported by crow-demo"})
		}
		return
	}
	var n acp.SessionNotification
	if json.Unmarshal(*req.Params, &n) != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := n.Update
	switch {
	case a.replaying:
		switch {
		case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
			a.replayed = append(a.replayed, "user:      "+u.UserMessageChunk.Content.Text.Text)
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			a.replayed = append(a.replayed, "assistant: "+u.AgentMessageChunk.Content.Text.Text)
		}
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		a.chunks++
		fmt.Fprint(a.d.out, u.AgentMessageChunk.Content.Text.Text)
	}
}

type readWriteCloser struct {
	r io.Reader
	w io.WriteCloser
}

func (rw readWriteCloser) Read(p []byte) (int, error)  { return rw.r.Read(p) }
func (rw readWriteCloser) Write(p []byte) (int, error) { return rw.w.Write(p) }
func (rw readWriteCloser) Close() error                { return rw.w.Close() }
