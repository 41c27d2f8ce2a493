// Command crow-demo shows crow-acp working, offline: it starts the fake
// OpenAI-compatible model in-process, runs the real crow-acp binary over real
// pipes the way an editor does, and prints a readable transcript of a
// session that streams, survives a restart, is loaded and continued, and is
// then listed with `crow-acp sessions list`.
//
//	crow-demo -bin bin/crow-acp      (what `make demo` runs)
package main

import (
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
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
	if err := os.WriteFile(filepath.Join(d.cwd, "README.md"), []byte(readme), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.cwd, "server.log"), []byte(serverLog()), 0o644); err != nil {
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
		"CROW_CONTEXT_WINDOW=" + strconv.Itoa(demoWindow),
	}

	d.heading("crow-acp demo — offline, against a scripted OpenAI-compatible model")
	d.say("model endpoint  %s (fake, scripted, on the loopback)", d.model.URL())
	d.say("database        %s", filepath.Join(dir, "crow.db"))
	d.say("project         %s", d.cwd)
	d.say("context window  %d tokens (CROW_CONTEXT_WINDOW), so that compaction comes quickly", demoWindow)

	// 1. A new session; the reply streams.
	d.heading("1. An editor starts crow-acp, opens a session; the model streams and uses tools")
	a, err := d.start(ctx)
	if err != nil {
		return err
	}
	if err := a.initialize(); err != nil {
		return err
	}
	ctx30, cancel30 := context.WithTimeout(ctx, callTimeout)
	created, err := a.conn.NewSession(ctx30, &acp.NewSessionRequest{Cwd: d.cwd, McpServers: []acp.McpServer{}})
	cancel30()
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	sid := created.SessionID
	d.say("→ session/new            ← %s", sid)
	if err := a.prompt(sid, firstPrompt); err != nil {
		return err
	}
	if err := a.prompt(sid, secondPrompt); err != nil {
		return err
	}
	if a.tools < 3 || a.permissions < 1 {
		return fmt.Errorf("expected 3 tool calls and a permission request, saw %d and %d", a.tools, a.permissions)
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
	a.setReplaying(true)
	ctx30, cancel30 = context.WithTimeout(ctx, callTimeout)
	_, err = a.conn.LoadSession(ctx30, &acp.LoadSessionRequest{SessionID: sid, Cwd: d.cwd, McpServers: []acp.McpServer{}})
	cancel30()
	if err != nil {
		return fmt.Errorf("session/load: %w", err)
	}
	a.setReplaying(false)
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
	if !bytes.Contains(last, []byte(summaryMarker)) || !bytes.Contains(last, []byte(thirdPrompt)) {
		return errors.New("after the restart the model did not receive the compacted conversation")
	}
	d.say("  the model's request was rebuilt from the database: %d messages — the summary of the compacted turns,", countMessages(last))
	d.say("  the turn after it and the new prompt (the originals stay stored: sessions show lists them, marked)")
	notes, err := os.ReadFile(filepath.Join(d.cwd, "NOTES.md"))
	if err != nil {
		return fmt.Errorf("the write_file tool did not write NOTES.md: %w", err)
	}
	d.say("  NOTES.md, written by the tool after permission was given: %q", strings.TrimSpace(string(notes)))
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

// demoWindow is small, so that a few turns with tool output need
// compaction: the third prompt crosses the threshold (0.9 of the window
// minus the reply reserve) while the request after the log was read stays
// under it. TestDemo fails if the tools' size moves either out of range.
const demoWindow = 5300

const (
	firstPrompt  = "What is this project? Keep a short note of it in NOTES.md."
	secondPrompt = "The service crashed last night. Read server.log and tell me what failed."
	thirdPrompt  = "Good. Which request should I replay to reproduce it?"
	lastPrompt   = "What did we find out before the restart?"

	summaryMarker = "## Task"
)

// analysis makes the second answer long, so that the next prompt crosses
// the compaction threshold at the start of a turn.
var analysis = strings.Repeat("The requests before it all evaluated well-formed expressions in a few milliseconds, "+
	"so load was not the cause; the panic came from the missing length check alone, and the fix is to return "+
	"ErrEmptyInput before reading the first token. ", 30)

const readme = "# parser-service\nA small HTTP service that parses and evaluates arithmetic expressions.\n"

// serverLog is a log large enough to fill much of the window when read.
func serverLog() string {
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "2026-11-20T23:%02d:%02dZ INFO request id=%04d path=/eval expr=%q status=200 duration=%dms\n", i/60, i%60, 1000+i, fmt.Sprintf("(%d+%d)*%d", i, i+1, i+2), 3+i%7)
	}
	b.WriteString("2026-11-20T23:59:58Z ERROR request id=1040 path=/eval expr=\"\" panic: runtime error: index out of range [0] with length 0\n")
	b.WriteString("2026-11-20T23:59:58Z ERROR goroutine 71 [running]: main.ParseExpr(...) parser.go:42\n")
	return b.String()
}

// script is what the fake model answers, in order: tool calls, streamed
// text (words 20 ms apart, to make the streaming visible), the summary
// compaction asks for, and the answers after it.
var script = []fakemodel.Reply{
	{ToolCalls: []fakemodel.ToolCall{
		{ID: "call_read", Name: "read_file", Arguments: `{"path":"README.md"}`},
		{ID: "call_note", Name: "write_file", Arguments: `{"path":"NOTES.md","content":"parser-service: HTTP service that parses and evaluates arithmetic expressions.\n"}`},
	}},
	{Text: "It is parser-service, a small HTTP service that parses and evaluates arithmetic expressions. I wrote that down in NOTES.md.", DelayMS: 20},
	{ToolCalls: []fakemodel.ToolCall{{ID: "call_log", Name: "read_file", Arguments: `{"path":"server.log"}`}}},
	{Text: "Request 1040 sent an empty expression; ParseExpr read tokens[0] of an empty slice and panicked (parser.go:42). " +
		"Every other request succeeded. " + analysis, Chunks: 60, DelayMS: 20},
	// The summary request compaction makes.
	{Text: summaryMarker + "\nFind why parser-service crashed.\n## Findings\nRequest 1040 with an empty expression made ParseExpr panic (index out of range, parser.go:42).\n## Files\nREADME.md, NOTES.md, server.log"},
	{Text: "Replay request 1040: POST /eval with an empty expression.", DelayMS: 20},
	{Text: "Request 1040 sent an empty expression and ParseExpr panicked on it at parser.go:42; the notes are in NOTES.md.", DelayMS: 20},
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

// callTimeout bounds each request of the demo.
const callTimeout = 30 * time.Second

// agentProc is one crow-acp process and the ACP client talking to it. It
// serves the agent's requests: session updates are rendered, permission
// questions answered "allow once" (anything else: -32601).
type agentProc struct {
	acp.UnimplementedClient

	d     *demo
	cmd   *exec.Cmd
	conn  *acp.ClientConn
	stdin io.WriteCloser

	mu          sync.Mutex
	replaying   bool
	replayed    []string
	chunks      int
	inReply     bool // "assistant: " was printed for the current reply
	shown       int  // bytes of the current reply received
	compactions []string
	tools       int
	permissions int
	toolTitles  map[string]string
}

// endReply ends the line of a streamed reply before other output.
func (a *agentProc) endReply() {
	if a.inReply {
		fmt.Fprintln(a.d.out)
		a.inReply = false
	}
}

func (a *agentProc) setReplaying(on bool) {
	a.mu.Lock()
	a.replaying = on
	a.mu.Unlock()
}

// RequestPermission allows once, as a person clicking "Allow" would.
func (a *agentProc) RequestPermission(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.endReply()
	choice := acp.RequestPermissionOutcome{Outcome: "cancelled"}
	name := "cancelled (no allow option)"
	for _, o := range p.Options {
		if o.Kind == acp.PermissionAllowOnce {
			choice = acp.RequestPermissionOutcome{Outcome: "selected", OptionID: o.OptionID}
			name = o.Name
			break
		}
	}
	a.permissions++
	fmt.Fprintf(a.d.out, "  ? permission  %s → the user picks %q\n", p.ToolCall.Title, name)
	return &acp.RequestPermissionResponse{Outcome: choice}, nil
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
	a := &agentProc{d: d, cmd: cmd, stdin: stdin, toolTitles: make(map[string]string)}
	a.conn = acp.NewClientConn(stdout, stdin, a, acp.Options{})
	d.say("$ crow-acp serve        (pid %d, ACP over its stdin/stdout)", cmd.Process.Pid)
	return a, nil
}

func (a *agentProc) initialize() error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	compaction := json.RawMessage(`{}`)
	res, err := a.conn.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion,
		ClientCapabilities: acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{Compaction: &compaction}},
		ClientInfo:         &acp.Implementation{Name: "crow-demo", Version: "1"}})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	name := "?"
	if res.AgentInfo != nil {
		name = res.AgentInfo.Name + " " + res.AgentInfo.Version
	}
	a.d.say("→ initialize             ← protocol %d, %s, loadSession=%v", res.ProtocolVersion, name, res.AgentCapabilities.LoadSession)
	return nil
}

// prompt sends one prompt and prints the reply as it streams.
func (a *agentProc) prompt(sid, text string) error {
	a.d.say("→ session/prompt         %q", short(text, 90))
	a.mu.Lock()
	a.chunks = 0
	a.shown = 0
	a.inReply = false
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	res, err := a.conn.Prompt(ctx, &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	cancel()
	a.mu.Lock()
	n := a.chunks
	if a.inReply {
		fmt.Fprintln(a.d.out)
	}
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("session/prompt: %w", err)
	}
	a.mu.Lock()
	shown := a.shown
	a.mu.Unlock()
	a.d.say("  ← stopReason %q after %d streamed chunks (%d bytes)", res.StopReason, n, shown)
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

// SessionUpdate renders what the agent sends.
func (a *agentProc) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
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
		// Long answers are cut in the transcript (not in the session).
		t := u.AgentMessageChunk.Content.Text.Text
		switch {
		case a.shown+len(t) <= maxShown:
			fmt.Fprint(a.d.out, t)
		case a.shown <= maxShown:
			fmt.Fprint(a.d.out, " […]")
		}
		a.shown += len(t)
	case u.ToolCall != nil:
		a.endReply()
		a.toolTitles[u.ToolCall.ToolCallID] = u.ToolCall.Title
		fmt.Fprintf(a.d.out, "  ⚙ tool call  %s [%s]\n", u.ToolCall.Title, u.ToolCall.Kind)
		a.tools++
	case u.ToolCallUpdate != nil && (u.ToolCallUpdate.Status == acp.ToolStatusCompleted || u.ToolCallUpdate.Status == acp.ToolStatusFailed):
		a.endReply()
		fmt.Fprintf(a.d.out, "  %s %s\n", map[acp.ToolCallStatus]string{acp.ToolStatusCompleted: "✓ completed ", acp.ToolStatusFailed: "✗ failed    "}[u.ToolCallUpdate.Status],
			a.toolTitles[u.ToolCallUpdate.ToolCallID])
	case u.Other != nil:
		if line := compactionLine(u.Other); line != "" {
			a.compactions = append(a.compactions, line)
			a.endReply()
			fmt.Fprintf(a.d.out, "  %s\n", line)
		}
	}
	return nil
}

// compactionLine describes a compaction_update ("" for other updates).
func compactionLine(raw json.RawMessage) string {
	c, ok := acp.ParseCompactionUpdate(raw)
	if !ok {
		return ""
	}
	line := "compaction " + c.Status
	if c.Error != nil {
		line += ": " + short(*c.Error, 200)
	}
	for _, b := range c.Summary {
		if b.Text != nil {
			line += ": " + short(b.Text.Text, 160)
		}
	}
	return line
}

// maxShown is how much of one answer the transcript prints.
const maxShown = 300

// short cuts s to one line of at most n runes.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
