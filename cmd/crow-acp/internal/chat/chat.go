package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/terminal"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Conn is the chat's side of the ACP connection to the agent
// (*acp.ClientConn).
type Conn interface {
	NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error)
	LoadSession(ctx context.Context, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error)
	Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error)
	Cancel(ctx context.Context, n *acp.CancelNotification) error
	Call(ctx context.Context, method string, params, result any) error
}

// Options are what the chat needs of its process.
type Options struct {
	In          io.Reader
	Out         io.Writer // the conversation; stdout
	Cwd         string    // the project directory of new sessions
	HistoryFile string    // the line editor's history; "" keeps none
	Thoughts    bool      // show the model's reasoning instead of folding it
	Getenv      func(string) string
	// Signals delivers SIGINT (cancel the turn; twice: quit) and SIGTERM.
	Signals <-chan os.Signal
	// Sessions lists the stored sessions of a directory, newest first.
	Sessions func(ctx context.Context, cwd string) ([]persistence.Session, error)
	Model    string // the configured model, until the agent names one
}

// ErrNotFound is a session to resume that does not exist.
var ErrNotFound = errors.New("no such session")

// Chat is one terminal conversation with the agent.
type Chat struct {
	opt       Options
	ui        *terminal.UI
	lines     lineReader
	color     bool          // SGR allowed on Out
	tty       bool          // a person types at a terminal
	cancelReq chan struct{} // Ctrl-C: during a turn, or at a permission question
	closing   sync.Once
	quitting  chan struct{} // closed at SIGTERM: the chat ends

	mu       sync.Mutex // guards status, commands and options (updated on the read loop)
	status   Status
	commands []acp.AvailableCommand
	options  []acp.SessionConfigOption // the session's (model, mode)

	session string

	// Set on a terminal with the line editor (nil otherwise): the editor
	// reads all the time, so that prompts typed during a turn are queued.
	screen *screen
	pump   *pump
	out    io.Writer // the conversation: screen, or Options.Out

	queue   []string   // prompts typed during a turn or command, sent after it
	pending []shellRun // !commands run since the last prompt, offered to the model
	changes changes    // what the session's edits changed (/diff); guarded by mu
}

// New prepares a chat; Client is what the agent's connection calls.
func New(opt Options) (*Chat, error) {
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	dumb := opt.Getenv("TERM") == "dumb"
	outTTY := terminal.IsTerminal(opt.Out)
	c := &Chat{
		opt:       opt,
		tty:       terminal.IsTerminal(opt.In) && outTTY,
		color:     outTTY && !dumb && opt.Getenv("NO_COLOR") == "",
		cancelReq: make(chan struct{}, 1),
		quitting:  make(chan struct{}),
		status:    Status{Model: opt.Model},
	}
	if c.tty && !dumb {
		ed, err := newEditor(opt.In, opt.Out, opt.HistoryFile, completer{commands: c.complete, paths: c.completePath})
		if err != nil {
			return nil, err
		}
		c.lines = ed
		c.screen = newScreen(ed, "> ", c.width)
		c.pump = newPump(ed, c.screen)
		c.out = c.screen
	} else {
		c.lines = newPlainReader(opt.In, opt.Out, c.tty)
		c.out = opt.Out
	}
	uiOpt := terminal.Options{
		Thoughts: opt.Thoughts, FoldThoughts: true, ShowOutput: true, ShowUser: true,
		Observe: c.observe, ReadLine: c.readAnswer, NoColor: !c.color, NoProgress: dumb,
		Terminal: c.screen != nil, Width: c.width,
	}
	if c.color {
		uiOpt.Answer = NewMarkdownStream(c.out, c.width)
	}
	// One stream: the conversation and the work around it, in order.
	c.ui = terminal.New(opt.In, c.out, c.out, uiOpt)
	return c, nil
}

// Client is the ACP client the agent's connection is served to.
func (c *Chat) Client() acp.Client { return c.ui }

// Close releases the terminal.
func (c *Chat) Close() error {
	c.ui.Close()
	if c.pump != nil {
		c.pump.stop()
	}
	return c.lines.Close()
}

func (c *Chat) width() int {
	if f, ok := c.opt.Out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

func (c *Chat) observe(u acp.SessionUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.Observe(u)
	if u.ConfigOptionUpdate != nil {
		c.options = u.ConfigOptionUpdate.ConfigOptions
	}
	c.changes.observe(u)
	if u.AvailableCommandsUpdate != nil {
		c.commands = append([]acp.AvailableCommand(nil), u.AvailableCommandsUpdate.AvailableCommands...)
	}
}

// readAnswer reads a permission answer; Ctrl-C there also cancels the
// turn.
func (c *Chat) readAnswer(prompt string) (string, error) {
	var line string
	var err error
	if c.pump != nil {
		line, err = c.pump.ask(prompt, c.quitting)
	} else {
		line, err = c.lines.ReadLine(prompt)
	}
	if errors.Is(err, errInterrupt) {
		select {
		case c.cancelReq <- struct{}{}:
		default:
		}
	}
	return line, err
}

// Run starts a session (or resumes the one named) and converses until the
// person quits. It returns nil at a normal exit. Interrupts come from
// Options.Signals, not from a context.
func (c *Chat) Run(conn Conn, resume string) error {
	go c.watchSignals()
	if c.pump != nil {
		go c.pump.run()
	}
	if resume != "" {
		if err := c.load(conn, resume); err != nil {
			return err
		}
	} else if err := c.newSession(conn); err != nil {
		return err
	}
	c.note("session %s in %s · /help for commands · Ctrl-D quits", c.session, c.opt.Cwd)
	interrupted := false
	for {
		if len(c.queue) > 0 {
			text := c.queue[0]
			c.queue = c.queue[1:]
			c.note("▸ the queued prompt: %s", termsafe.Line(transcript.OneLine(text, max(20, c.width()-24))))
			if quit := c.handle(conn, text); quit {
				return nil
			}
			continue
		}
		c.showStatus()
		text, err := c.readPrompt()
		if c.terminated() {
			return nil
		}
		switch {
		case errors.Is(err, errInterrupt):
			if strings.TrimSpace(text) == "" {
				if interrupted {
					return nil
				}
				interrupted = true
				c.note("(Ctrl-C again or Ctrl-D to quit)")
			}
			continue
		case errors.Is(err, io.EOF):
			if c.tty {
				fmt.Fprintln(c.out)
			}
			return nil
		case err != nil:
			return err
		}
		interrupted = false
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		c.lines.Remember(text)
		if quit := c.handle(conn, text); quit {
			return nil
		}
	}
}

// handle acts on one prompt as typed: a !command, a slash command, or a
// prompt for the agent with its @files attached.
func (c *Chat) handle(conn Conn, text string) (quit bool) {
	if strings.HasPrefix(text, "!") {
		command := strings.TrimSpace(text[1:])
		if command == "" {
			c.note("!COMMAND runs COMMAND in %s and offers its output to the model", c.opt.Cwd)
			return false
		}
		return c.shell(command)
	}
	if strings.HasPrefix(text, "/") {
		// A background context: the process's own ends at the first
		// Ctrl-C, which here only cancels a turn.
		quit, handled, err := c.command(context.Background(), conn, text)
		if err != nil {
			c.note("✗ %v", err)
		}
		if quit || handled {
			return quit
		}
	}
	blocks, err := c.promptBlocks(text)
	if err != nil {
		c.note("✗ %v: nothing was sent (Up recalls the prompt)", err)
		return false
	}
	return c.turn(conn, blocks)
}

// promptBlocks is what a prompt sends: the output of the !commands run
// since the last one, the text, and the files its @paths name.
func (c *Chat) promptBlocks(text string) ([]acp.ContentBlock, error) {
	files, notes, err := attachments(c.opt.Cwd, text)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		c.note("%s", n)
	}
	var blocks []acp.ContentBlock
	for _, r := range c.pending {
		blocks = append(blocks, r.block())
	}
	c.pending = nil
	blocks = append(blocks, acp.TextBlock(text))
	return append(blocks, files...), nil
}

// completePath completes an @path beneath the session's directory.
func (c *Chat) completePath(typed string) []string { return completePaths(c.opt.Cwd, typed) }

// readLine reads one line: from the pump on a terminal (the editor reads
// all the time), else from the reader.
func (c *Chat) readLine(prompt string) (string, error) {
	if c.pump == nil {
		return c.lines.ReadLine(prompt)
	}
	c.screen.setBase(prompt)
	c.pump.request()
	select {
	case r := <-c.pump.typed:
		return r.text, r.err
	case <-c.quitting:
		return "", io.EOF
	}
}

// typed is where lines typed while the chat is busy arrive; nil without
// the line editor (then nothing can be typed meanwhile).
func (c *Chat) typed() <-chan inputLine {
	if c.pump == nil {
		return nil
	}
	return c.pump.typed
}

// setBusy shows the busy prompt and has the line editor read all the
// time (on), or only when a line is asked for (off).
func (c *Chat) setBusy(on bool) {
	if c.pump == nil {
		return
	}
	if on {
		c.screen.setBase(busyPrompt)
	}
	c.pump.busy(on)
}

// maxQueued bounds the prompts waiting for a turn to end.
const maxQueued = 20

// busyPrompt is the prompt shown while a turn or a command runs.
const busyPrompt = "queue » "

// onTyped acts on a line typed during a turn or a !command: a prompt is
// queued, /unqueue drops the queue; interrupt is Ctrl-C on an empty
// line (stop what runs).
func (c *Chat) onTyped(r inputLine) (interrupt bool) {
	if errors.Is(r.err, errInterrupt) {
		return strings.TrimSpace(r.text) == ""
	}
	text := strings.TrimSpace(r.text)
	if r.err != nil || text == "" {
		return false
	}
	c.lines.Remember(text)
	switch {
	case text == "/unqueue":
		c.dropQueue("")
	case len(c.queue) >= maxQueued:
		c.note("✗ %d prompts are queued already: this one is not (Up recalls it)", maxQueued)
	default:
		c.queue = append(c.queue, text)
		c.note("⏸ queued (%d): %s · sent when this turn ends; /unqueue drops the queue",
			len(c.queue), termsafe.Line(transcript.OneLine(text, max(20, c.width()-70))))
	}
	return false
}

// dropQueue forgets the queued prompts (they stay in the history).
func (c *Chat) dropQueue(why string) {
	if len(c.queue) == 0 {
		if why == "" {
			c.note("nothing is queued")
		}
		return
	}
	n := len(c.queue)
	c.queue = nil
	msg := "dropped " + transcript.Plural(n, "queued prompt") + " (Up recalls them)"
	if why != "" {
		msg += ": " + why
	}
	c.note("%s", msg)
}

// readPrompt reads one prompt: a line ending with a backslash continues on
// the next line, and a line of """ opens a block that ends at the next.
func (c *Chat) readPrompt() (string, error) {
	var parts []string
	block := false
	prompt := "> "
	for {
		line, err := c.readLine(prompt)
		if err != nil {
			if errors.Is(err, io.EOF) && len(parts) > 0 {
				return strings.Join(parts, "\n"), nil
			}
			return strings.Join(append(parts, line), "\n"), err
		}
		switch {
		case block && strings.TrimSpace(line) == `"""`:
			return strings.Join(parts, "\n"), nil
		case block:
			parts = append(parts, line)
		case len(parts) == 0 && strings.TrimSpace(line) == `"""`:
			block = true
		case strings.HasSuffix(line, `\`):
			parts = append(parts, strings.TrimSuffix(line, `\`))
		default:
			return strings.Join(append(parts, line), "\n"), nil
		}
		prompt = "… "
	}
}

// turn sends one prompt and renders the turn; Ctrl-C cancels it, a second
// Ctrl-C (or SIGTERM) quits.
func (c *Chat) turn(conn Conn, blocks []acp.ContentBlock) (quit bool) {
	c.drainInterrupts()
	c.setBusy(true)
	defer c.setBusy(false)
	type outcome struct {
		res *acp.PromptResponse
		err error
	}
	done := make(chan outcome, 1)
	c.ui.Waiting("waiting for the model")
	go func() {
		var o outcome
		o.res, o.err = conn.Prompt(context.Background(), &acp.PromptRequest{SessionID: c.session, Prompt: blocks})
		done <- o
	}()
	cancelling := false
	cancel := func() {
		cancelling = true
		c.ui.StopProgress()
		c.ui.Status("cancelling… (Ctrl-C again quits)")
		c.dropQueue("the turn was cancelled")
		_ = conn.Cancel(context.Background(), &acp.CancelNotification{SessionID: c.session})
	}
	var o outcome
	for {
		select {
		case o = <-done:
		case <-c.cancelReq:
			if cancelling {
				quit = true // a second Ctrl-C while cancelling
			} else {
				cancel()
			}
		case r := <-c.typed():
			if !c.onTyped(r) {
				continue
			}
			if cancelling {
				quit = true
			} else {
				cancel()
			}
		case <-c.quitting:
			if !cancelling {
				cancel()
			}
			quit = true
		}
		if quit {
			// What the agent stores when it sees the cancellation is kept:
			// wait (bounded) for its answer.
			select {
			case o = <-done:
			case <-time.After(10 * time.Second):
			}
			c.ui.Finish()
			return true
		}
		if o.res != nil || o.err != nil {
			break
		}
	}
	c.ui.Finish()
	if c.tty {
		fmt.Fprintln(c.out) // the turn ends; the status line follows
	}
	switch {
	case refused(o.err):
		// The agent refused the prompt itself (too large, an image the
		// model cannot read): nothing was stored.
		c.note("✗ %s", termsafe.Text(o.err.Error()))
	case o.err != nil:
		c.note("✗ %s (the prompt is stored; try again, or crow-acp doctor checks the set-up)", termsafe.Text(o.err.Error()))
	case o.res.StopReason == acp.StopCancelled:
		c.note("cancelled; what was said is kept")
	case o.res.StopReason != acp.StopEndTurn:
		c.note("%s", terminal.StopText(o.res.StopReason))
	}
	return false
}

// refused reports whether the agent refused a prompt as invalid, before
// storing anything.
func refused(err error) bool {
	var e *acp.Error
	return errors.As(err, &e) && e.Code == acp.CodeInvalidParams
}

// watchSignals turns SIGINT (which arrives only while no line is read: the
// line editor reads Ctrl-C as a key) into a cancel request, and SIGTERM
// into the end of the chat, unblocking a prompt that waits.
func (c *Chat) watchSignals() {
	for sig := range c.opt.Signals {
		if sig == syscall.SIGTERM {
			c.closing.Do(func() { close(c.quitting) })
			_ = c.lines.Close()
			return
		}
		select {
		case c.cancelReq <- struct{}{}:
		default:
		}
	}
}

func (c *Chat) terminated() bool {
	select {
	case <-c.quitting:
		return true
	default:
		return false
	}
}

func (c *Chat) drainInterrupts() {
	for {
		select {
		case <-c.cancelReq:
		default:
			return
		}
	}
}

func (c *Chat) newSession(conn Conn) error {
	res, err := conn.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: c.opt.Cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		return fmt.Errorf("new session: %w", err)
	}
	c.mu.Lock()
	c.status = Status{Model: c.status.Model}
	c.status.fromOptions(res.ConfigOptions)
	c.status.fromModes(res.Modes)
	c.options = res.ConfigOptions
	c.changes = changes{}
	c.mu.Unlock()
	c.session = res.SessionID
	c.pending = nil
	return nil
}

// load resumes a stored session and shows its history (the agent replays
// it before it answers).
func (c *Chat) load(conn Conn, id string) error {
	c.mu.Lock()
	c.changes = changes{} // the replay brings the session's own
	c.mu.Unlock()
	c.pending = nil
	res, err := conn.LoadSession(context.Background(), &acp.LoadSessionRequest{SessionID: id, Cwd: c.opt.Cwd, McpServers: []acp.McpServer{}})
	c.ui.Finish()
	var acpErr *acp.Error
	if errors.As(err, &acpErr) && acpErr.Code == acp.CodeResourceNotFound {
		return fmt.Errorf("%w: %q (/sessions lists them)", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("load session %s: %w", id, err)
	}
	c.mu.Lock()
	c.status = Status{Model: c.status.Model, Used: c.status.Used, Size: c.status.Size}
	c.status.fromOptions(res.ConfigOptions)
	c.status.fromModes(res.Modes)
	c.options = res.ConfigOptions
	c.mu.Unlock()
	c.session = id
	return nil
}

// note writes a line about the chat itself.
func (c *Chat) note(format string, args ...any) { c.ui.Status(format, args...) }

// showStatus writes the status line above the prompt.
func (c *Chat) showStatus() {
	if !c.tty {
		return
	}
	c.mu.Lock()
	line := c.status.Line(c.width() - 1)
	c.mu.Unlock()
	if line == "" {
		return
	}
	if c.color {
		line = sgrDim + line + sgrReset
	}
	fmt.Fprintln(c.out, line)
}

// --- slash commands ---

// ownCommands are the chat's own commands; the agent's come with
// available_commands_update and are sent to it as prompts.
var ownCommands = []struct{ name, args, help string }{
	{"/help", "", "show the commands"},
	{"/sessions", "", "list the sessions of this directory"},
	{"/resume", "ID", "continue a stored session (its history is shown)"},
	{"/new", "", "start a new session"},
	{"/model", "[NAME]", "list the models, or switch this session to one"},
	{"/mode", "[NAME]", "list the permission modes, or switch to one"},
	{"/diff", "", "show what this session's edits changed, as unified diffs"},
	{"/init", "", "have the model write a starter AGENTS.md for this project"},
	{"/unqueue", "", "drop the prompts typed during a turn (also while it runs)"},
	{"/quit", "", "leave the chat (Ctrl-D does too)"},
}

func (c *Chat) complete(prefix string) []string {
	var names []string
	for _, o := range ownCommands {
		names = append(names, o.name)
	}
	c.mu.Lock()
	for _, a := range c.commands {
		names = append(names, "/"+a.Name)
	}
	c.mu.Unlock()
	return matching(names, prefix)
}

// command runs one of the chat's own commands; handled is false for any
// other (the agent's, sent as a prompt).
func (c *Chat) command(ctx context.Context, conn Conn, text string) (quit, handled bool, err error) {
	name, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/quit", "/exit":
		return true, true, nil
	case "/help":
		c.help()
	case "/diff":
		c.showDiff()
	case "/init":
		if c.agentHas(name) {
			return false, false, nil // the agent's own command wins
		}
		quit, err := c.initProject(conn)
		return quit, true, err
	case "/unqueue":
		c.dropQueue("")
	case "/new":
		if err := c.newSession(conn); err != nil {
			return false, true, err
		}
		c.note("new session %s", c.session)
	case "/sessions":
		if c.opt.Sessions == nil {
			return false, true, errors.New("no session store")
		}
		ss, err := c.opt.Sessions(ctx, c.opt.Cwd)
		if err != nil {
			return false, true, err
		}
		if len(ss) == 0 {
			c.note("no sessions in this directory yet")
			return false, true, nil
		}
		c.ui.Finish()
		if err := transcript.WriteList(c.out, ss, false); err != nil {
			return false, true, err
		}
		c.note("/resume ID continues one")
	case "/model", "/mode":
		if c.agentHas(name) {
			return false, false, nil // the agent's own command wins
		}
		return false, true, c.setOption(ctx, conn, strings.TrimPrefix(name, "/"), arg)
	case "/rewind":
		n, err := strconv.Atoi(strings.Fields(arg + " x")[0])
		if err != nil || !c.agentHas(name) {
			return false, false, nil // the agent's list, or its answer
		}
		return c.rewind(ctx, conn, text, n), true, nil
	case "/resume":
		if arg == "" {
			return false, true, errors.New("/resume needs a session id (/sessions lists them)")
		}
		if err := c.load(conn, arg); err != nil {
			return false, true, err
		}
		c.note("resumed session %s", c.session)
	default:
		return false, false, nil
	}
	return false, true, nil
}

// rewind sends /rewind N to the agent and, once prompt N is gone from the
// session, puts its text in the input line to edit and send again.
func (c *Chat) rewind(ctx context.Context, conn Conn, text string, n int) (quit bool) {
	before, err := c.prompts(ctx, conn)
	if err != nil || n < 1 || n > len(before) || before[n-1].Number != n {
		return c.turn(conn, []acp.ContentBlock{acp.TextBlock(text)}) // the agent says why
	}
	if quit := c.turn(conn, []acp.ContentBlock{acp.TextBlock(text)}); quit {
		return true
	}
	if after, err := c.prompts(ctx, conn); err == nil && len(after) < n {
		if p, ok := c.lines.(interface{ Prefill(string) }); ok {
			p.Prefill(before[n-1].Text)
		}
	}
	return false
}

// promptInfo is a prompt of _crow/prompts.
type promptInfo struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// prompts lists the session's prompts as the agent numbers them.
func (c *Chat) prompts(ctx context.Context, conn Conn) ([]promptInfo, error) {
	var res struct {
		Prompts []promptInfo `json:"prompts"`
	}
	err := conn.Call(ctx, "_crow/prompts", map[string]string{"sessionId": c.session}, &res)
	return res.Prompts, err
}

func (c *Chat) help() {
	var b strings.Builder
	b.WriteString("The chat's commands:\n")
	for _, o := range ownCommands {
		fmt.Fprintf(&b, "  %-18s %s\n", strings.TrimSpace(o.name+" "+o.args), o.help)
	}
	c.mu.Lock()
	cmds := append([]acp.AvailableCommand(nil), c.commands...)
	c.mu.Unlock()
	if len(cmds) > 0 {
		b.WriteString("The agent's commands:\n")
		for _, a := range cmds {
			desc := a.Description
			if a.Input != nil && a.Input.Hint != "" {
				desc += " (input: " + a.Input.Hint + ")"
			}
			fmt.Fprintf(&b, "  %-18s %s\n", termsafe.Line(transcript.OneLine("/"+a.Name, 40)),
				termsafe.Line(transcript.OneLine(desc, max(20, c.width()-22))))
		}
	}
	b.WriteString("Input: end a line with \\ to continue it; a line of \"\"\" starts and ends a block (for pastes).\n")
	b.WriteString("@PATH attaches a file of the project (Tab completes it); !COMMAND runs a command and offers its output to the model.\n")
	b.WriteString("A prompt typed while a turn runs is queued and sent when it ends; /unqueue drops the queue.\n")
	b.WriteString("Ctrl-C cancels the running turn; Ctrl-C twice or Ctrl-D at an empty prompt quits. Tab completes commands.\n")
	c.ui.Finish()
	fmt.Fprint(c.out, b.String())
}

// agentHas reports whether the agent advertises the command name.
func (c *Chat) agentHas(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.commands {
		if "/"+a.Name == name {
			return true
		}
	}
	return false
}

// setOption lists the values of the session's config option of a
// category ("model", "mode"), or sets it with session/set_config_option.
func (c *Chat) setOption(ctx context.Context, conn Conn, category, value string) error {
	c.mu.Lock()
	var opt *acp.SessionConfigOption
	for i := range c.options {
		if c.options[i].Category == category {
			o := c.options[i]
			opt = &o
		}
	}
	c.mu.Unlock()
	if opt == nil {
		return fmt.Errorf("the agent offers no %s choice for this session", category)
	}
	if value == "" {
		var b strings.Builder
		for _, o := range opt.Options {
			mark := "  "
			if o.Value == opt.CurrentValue {
				mark = "▸ "
			}
			line := mark + o.Value
			if o.Name != "" && o.Name != o.Value {
				line += " (" + o.Name + ")"
			}
			if o.Description != "" {
				line += ": " + o.Description
			}
			b.WriteString(termsafe.Line(transcript.OneLine(line, max(20, c.width()-1))) + "\n")
		}
		c.ui.Finish()
		fmt.Fprint(c.out, b.String())
		c.note("/%s NAME switches", category)
		return nil
	}
	chosen := ""
	for _, o := range opt.Options {
		if o.Value == value || strings.EqualFold(o.Name, value) {
			chosen = o.Value
		}
	}
	if chosen == "" {
		return fmt.Errorf("no %s %q (/%s lists them)", category, value, category)
	}
	raw, _ := json.Marshal(chosen)
	var res acp.SetSessionConfigOptionResponse
	if err := conn.Call(ctx, "session/set_config_option", &acp.SetSessionConfigOptionRequest{
		SessionID: c.session, ConfigID: opt.ID, Value: raw}, &res); err != nil {
		return fmt.Errorf("set the %s: %w", category, err)
	}
	c.mu.Lock()
	if len(res.ConfigOptions) > 0 {
		c.options = res.ConfigOptions
		c.status.fromOptions(res.ConfigOptions)
	}
	c.mu.Unlock()
	c.note("%s: %s", category, termsafe.Line(chosen))
	return nil
}
