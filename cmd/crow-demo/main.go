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
		// A small window, so that compaction is reached in a few turns.
		"CROW_CONTEXT_WINDOW=1024",
		// The scripted conversation uses no tools; their schemas would not
		// fit in this window.
		"CROW_TOOLS=off",
	}

	d.heading("crow-acp demo — offline, against a scripted OpenAI-compatible model")
	d.say("model endpoint  %s (fake, scripted, on the loopback)", d.model.URL())
	d.say("database        %s", filepath.Join(dir, "crow.db"))
	d.say("project         %s", d.cwd)
	d.say("context window  1024 tokens (CROW_CONTEXT_WINDOW), so that compaction comes quickly")

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
	if err := a.prompt(sid, secondPrompt); err != nil {
		return err
	}

	d.heading("2. The context nears the window: crow-acp compacts it before the next request")
	if err := a.prompt(sid, thirdPrompt); err != nil {
		return err
	}
	if len(a.compactions) == 0 {
		return errors.New("the session was not compacted")
	}

	// 2. The process goes away; the session does not.
	d.heading("3. The editor quits: crow-acp exits; everything is already stored")
	if err := a.stop(); err != nil {
		return err
	}

	d.heading("4. A new crow-acp process loads the session and continues it")
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
	if err := a.prompt(sid, lastPrompt); err != nil {
		return err
	}
	reqs := d.model.Requests()
	if len(reqs) <= before {
		return errors.New("the continued prompt never reached the model")
	}
	last := reqs[len(reqs)-1]
	if !bytes.Contains(last, []byte(summaryMarker)) || !bytes.Contains(last, []byte(thirdPrompt[:40])) {
		return errors.New("after the restart the model did not receive the compacted conversation")
	}
	d.say("  the model's request was rebuilt from the database: %d messages — the summary of the compacted turns,", countMessages(last))
	d.say("  the turn after it and the new prompt (the originals stay stored: sessions show lists them, marked)")
	if err := a.stop(); err != nil {
		return err
	}

	// 4. The same sessions from the terminal.
	d.heading("5. From a shell: crow-acp sessions list")
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

// The prompts are long on purpose: with a small window, three turns
// are enough to need compaction.
const (
	firstPrompt = "I am working on the expression parser in parser.go of this Go project. When the input is empty, " +
		"ParseExpr panics with index out of range instead of returning an error: the tokenizer returns an empty " +
		"slice and the loop reads tokens[0] before checking the length. Explain the root cause first, then propose " +
		"a fix that returns ErrEmptyInput. Keep the public API unchanged, because two other packages call ParseExpr, " +
		"and do not touch the lexer package, which belongs to another team. Our style guide wants wrapped errors " +
		"with the operation name and no panics in library code."
	secondPrompt = "Now the evaluator in eval.go: dividing by zero silently returns positive infinity and the caller " +
		"prints Inf. Make Eval return ErrDivisionByZero wrapped with the operation name, and add tests for integer " +
		"and float division by zero, modulo by zero, and a nested expression where the zero appears only after " +
		"simplification. The same constraints as before apply: public API unchanged, lexer untouched, wrapped " +
		"errors, no panics. Also add one line to the CHANGELOG under Unreleased, keeping its format exactly."
	thirdPrompt = "Good. Before we stop, run the whole test suite with the race detector and tell me whether " +
		"anything else fails: which package, which test, and the first line of the failure message."
	lastPrompt = "What were the constraints I gave you at the start?"

	summaryMarker = "## Task"
)

// script is what the fake model answers, in order. Words arrive 30 ms
// apart so that the streaming is visible; the reported usage is what makes
// the third prompt cross the compaction threshold (0.9 of 1024 - 256).
var script = []fakemodel.Reply{
	{Text: "The root cause: the loop in ParseExpr reads tokens[0] before it checks len(tokens), so an empty slice " +
		"from the tokenizer panics. The fix checks the length first and returns ErrEmptyInput, wrapped with the " +
		"operation name as the style guide asks; ParseExpr keeps its signature, so its two callers do not change, " +
		"and the lexer package is not touched. I added a table-driven test with empty input, whitespace only, a " +
		"single number, nested parentheses and an unbalanced closing parenthesis.", DelayMS: 20},
	{Text: "Eval now returns ErrDivisionByZero, wrapped with the operation, for integer and float division and for " +
		"modulo; the nested case simplifies first and then reports the error from the innermost division. The four " +
		"new tests pass, the public API is unchanged, the lexer is untouched, nothing panics, and the CHANGELOG has " +
		"one line under Unreleased in its existing format.", DelayMS: 20,
		// As a provider reports it: the next request would pass the threshold.
		Usage: &fakemodel.Usage{PromptTokens: 640, CompletionTokens: 100, TotalTokens: 740}},
	// The summary request compaction makes.
	{Text: summaryMarker + "\nFix ParseExpr on empty input (ErrEmptyInput); Eval division by zero (ErrDivisionByZero).\n" +
		"## Constraints\nPublic API unchanged; lexer untouched; wrapped errors; no panics.\n## Files\nparser.go, eval.go, CHANGELOG"},
	{Text: "The race detector finds nothing else: every package passes.", DelayMS: 20},
	{Text: "Public API unchanged, the lexer package untouched, errors wrapped with the operation name, and no panics in library code.", DelayMS: 20},
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

	mu          sync.Mutex
	replaying   bool
	replayed    []string
	chunks      int
	inReply     bool // "assistant: " was printed for the current reply
	compactions []string
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
	compaction := json.RawMessage(`{}`)
	if err := a.call("initialize", acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion,
		ClientCapabilities: acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{Compaction: &compaction}},
		ClientInfo:         &acp.Implementation{Name: "crow-demo", Version: "1"}}, &res); err != nil {
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
	a.d.say("→ session/prompt         %q", short(text, 90))
	a.mu.Lock()
	a.chunks = 0
	a.inReply = false
	a.mu.Unlock()
	var res acp.PromptResponse
	err := a.call("session/prompt", acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}, &res)
	a.mu.Lock()
	n := a.chunks
	if a.inReply {
		fmt.Fprintln(a.d.out)
	}
	a.mu.Unlock()
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
			a.replayed = append(a.replayed, "user:      "+short(u.UserMessageChunk.Content.Text.Text, 100))
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			a.replayed = append(a.replayed, "assistant: "+short(u.AgentMessageChunk.Content.Text.Text, 100))
		case u.Other != nil:
			if line := compactionLine(u.Other); line != "" {
				a.replayed = append(a.replayed, line)
			}
		}
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		if !a.inReply {
			fmt.Fprint(a.d.out, "  assistant: ")
			a.inReply = true
		}
		a.chunks++
		fmt.Fprint(a.d.out, u.AgentMessageChunk.Content.Text.Text)
	case u.Other != nil:
		if line := compactionLine(u.Other); line != "" {
			a.compactions = append(a.compactions, line)
			if a.inReply {
				fmt.Fprintln(a.d.out)
				a.inReply = false
			}
			fmt.Fprintf(a.d.out, "  %s\n", line)
		}
	}
}

// compactionLine describes a compaction_update ("" for other updates).
func compactionLine(raw json.RawMessage) string {
	var c struct {
		SessionUpdate string             `json:"sessionUpdate"`
		Status        string             `json:"status"`
		Summary       []acp.ContentBlock `json:"summary"`
	}
	if json.Unmarshal(raw, &c) != nil || c.SessionUpdate != "compaction_update" {
		return ""
	}
	line := "compaction " + c.Status
	for _, b := range c.Summary {
		if b.Text != nil {
			line += ": " + short(b.Text.Text, 160)
		}
	}
	return line
}

// short cuts s to one line of at most n runes.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

type readWriteCloser struct {
	r io.Reader
	w io.WriteCloser
}

func (rw readWriteCloser) Read(p []byte) (int, error)  { return rw.r.Read(p) }
func (rw readWriteCloser) Write(p []byte) (int, error) { return rw.w.Write(p) }
func (rw readWriteCloser) Close() error                { return rw.w.Close() }
