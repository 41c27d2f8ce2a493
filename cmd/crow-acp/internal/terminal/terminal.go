// Package terminal is `crow-acp exec`'s ACP client for a person at a
// terminal: it renders a turn's session updates (the answer on stdout, the
// work on stderr) and asks the permission questions.
package terminal

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// UI is exec's ACP client: it renders session/update notifications
// and answers session/request_permission. It advertises no fs or terminal
// capability, so the agent never sends those requests; anything else is
// answered "method not found".
//
// The answer goes to stdout; everything about the work (tool calls,
// permission questions, progress, the agent's notes, the session id) goes
// to stderr. Everything the model, a tool or the endpoint wrote passes
// through termsafe first: it cannot act on the terminal.
type UI struct {
	acp.UnimplementedClient // no fs or terminal: -32601

	out, errw       io.Writer
	in              io.Reader
	outTTY, errTTY  bool
	inTTY           bool
	opt             Options
	progressEnabled bool

	mu        sync.Mutex // guards everything below and every write
	replaying bool
	midLine   bool // stdout's last text did not end with a newline
	thinking  bool // the last thing written to stderr is a thought
	titles    map[string]string
	kinds     map[string]acp.ToolKind
	folded    int // words of reasoning not shown (FoldThoughts)
	spin      *spinner
	lines     *bufio.Reader // stdin, for permission answers
	live      liveView      // a running command's output, shown as it comes
}

// Options are exec's flags that change what the client shows or answers.
type Options struct {
	Yes      bool // grant every permission request (once each) without asking
	Thoughts bool // show the model's reasoning on stderr

	// What the chat adds; exec leaves these zero.

	// Answer renders the answer (Markdown for a terminal); nil writes the
	// text as it comes. It gets the model's raw text and must make it safe.
	Answer AnswerWriter
	// ReadLine reads a permission answer with the chat's line editor; nil
	// reads a line of in.
	ReadLine func(prompt string) (string, error)
	// ShowOutput shows a finished command's output, bounded.
	ShowOutput bool
	// ShowUser shows the user's messages (a resumed session's history).
	ShowUser bool
	// FoldThoughts shows hidden reasoning as one line saying how long it was.
	FoldThoughts bool
	// NoColor writes no colours or styles (NO_COLOR, TERM=dumb);
	// NoProgress draws no progress line (TERM=dumb cannot erase one).
	NoColor, NoProgress bool
	// Observe sees every update before it is rendered (usage, commands,
	// mode: what a status line needs). It runs on the read loop.
	Observe func(acp.SessionUpdate)
	// Terminal says out and errw are a terminal though they are not an
	// *os.File (the chat's screen, which keeps the line editor's prompt).
	Terminal bool
	// Width is the terminal's width; nil asks errw's terminal.
	Width func() int
}

// AnswerWriter renders the answer as it streams.
type AnswerWriter interface {
	Write(text string) // a piece of the answer
	Flush()            // something else is shown next: write what is held back
	End()              // the answer ended
}

// New returns the client for a person on in, out (the answer) and errw
// (everything else).
func New(in io.Reader, out, errw io.Writer, opt Options) *UI {
	ui := &UI{
		out: out, errw: errw, in: in, opt: opt,
		outTTY: opt.Terminal || IsTerminal(out), errTTY: opt.Terminal || IsTerminal(errw), inTTY: IsTerminal(in),
		titles: make(map[string]string), kinds: make(map[string]acp.ToolKind),
	}
	// Progress is drawn only where a person watches: a terminal on stderr.
	ui.progressEnabled = ui.errTTY && !opt.NoProgress
	return ui
}

// IsTerminal reports whether v is an *os.File on a terminal.
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// SessionUpdate renders an update. The client connection calls it on its
// read loop, so updates are rendered in the order the agent sent them.
func (ui *UI) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	if ui.opt.Observe != nil {
		ui.opt.Observe(n.Update)
	}
	ui.render(n.Update)
	return nil
}

// RequestPermission asks the person (or answers for them: --yes, no
// terminal). It runs off the read loop, so asking may take a while; a
// $/cancel_request is not acted on: the question is answered when the
// person answers.
func (ui *UI) RequestPermission(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	res := ui.askPermission(p)
	return &res, nil
}

// SetReplaying hides what arrives while a loaded session's history is
// replayed.
func (ui *UI) SetReplaying(on bool) {
	ui.mu.Lock()
	ui.replaying = on
	ui.mu.Unlock()
}

// render shows one update.
func (ui *UI) render(u acp.SessionUpdate) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	if ui.replaying {
		return
	}
	if ui.liveUpdate(u) {
		return
	}
	switch {
	case u.AgentMessageChunk != nil:
		t := u.AgentMessageChunk.Content.Text
		switch {
		case t == nil || t.Text == "":
		case u.AgentMessageChunk.MessageID == "":
			// Text that belongs to no stored message is the agent's own
			// note (the window was too small, compacting and retrying):
			// not the answer, so not on stdout.
			ui.noteLocked("%s", ui.dim(termsafe.Text(strings.TrimSpace(t.Text))))
		case ui.opt.Answer != nil:
			ui.stopSpinLocked()
			ui.endThoughtLocked()
			ui.opt.Answer.Write(t.Text)
		default:
			ui.stopSpinLocked()
			ui.endThoughtLocked()
			fmt.Fprint(ui.out, termsafe.Text(t.Text))
			ui.midLine = !strings.HasSuffix(t.Text, "\n")
		}
	case u.UserMessageChunk != nil:
		if t := u.UserMessageChunk.Content.Text; t != nil && ui.opt.ShowUser {
			ui.stopSpinLocked()
			ui.flushAnswerLocked()
			ui.endThoughtLocked()
			ui.breakLineLocked()
			text := strings.TrimRight(termsafe.Text(t.Text), "\n")
			fmt.Fprintf(ui.errw, "\n%s\n\n", ui.styled(bold, "› "+strings.ReplaceAll(text, "\n", "\n  ")))
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil && !ui.opt.Thoughts && ui.opt.FoldThoughts {
			ui.folded += len(strings.Fields(t.Text))
		}
		if t := u.AgentThoughtChunk.Content.Text; t != nil && ui.opt.Thoughts {
			ui.stopSpinLocked()
			ui.breakLineLocked()
			if !ui.thinking {
				fmt.Fprint(ui.errw, ui.dim("thinking: "))
				ui.thinking = true
			}
			fmt.Fprint(ui.errw, ui.dim(termsafe.Text(t.Text)))
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		title := termsafe.Line(tc.Title)
		ui.titles[tc.ToolCallID] = title
		ui.kinds[tc.ToolCallID] = tc.Kind
		ui.noteLocked("⚙ %s%s", title, kindSuffix(tc.Kind))
		if tc.Status == acp.ToolStatusInProgress || tc.Status == acp.ToolStatusPending {
			ui.startSpinLocked("running " + title)
		}
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		if tu.Title != "" {
			ui.titles[tu.ToolCallID] = termsafe.Line(tu.Title)
		}
		title := ui.titles[tu.ToolCallID]
		switch tu.Status {
		case acp.ToolStatusInProgress:
			ui.startSpinLocked("running " + title)
		case acp.ToolStatusCompleted:
			shown := ui.endLiveLocked(tu.ToolCallID, tu.Content)
			ui.noteLocked("✓ %s", title)
			if ui.opt.ShowOutput && ui.kinds[tu.ToolCallID] == acp.ToolKindExecute {
				ui.writeOutputLocked(tu.Content, shown)
			}
			ui.startSpinLocked("waiting for the model")
		case acp.ToolStatusFailed:
			shown := ui.endLiveLocked(tu.ToolCallID, tu.Content)
			if ui.opt.ShowOutput && ui.kinds[tu.ToolCallID] == acp.ToolKindExecute {
				ui.noteLocked("✗ %s", title)
				ui.writeOutputLocked(tu.Content, shown) // its end says why
			} else {
				ui.noteLocked("✗ %s%s", title, failureText(tu.Content))
			}
			ui.startSpinLocked("waiting for the model")
		}
	case u.Plan != nil:
		ui.noteLocked("plan:")
		for _, e := range u.Plan.Entries {
			mark := map[string]string{"completed": "✓", "in_progress": "▸"}[e.Status]
			if mark == "" {
				mark = "·"
			}
			ui.noteLocked("  %s %s", mark, termsafe.Line(e.Content))
		}
	case u.Other != nil:
		ui.renderOtherLocked(u.Other)
	}
}

// renderOtherLocked shows the update kinds acp has no type for: the
// (unstable) compaction_update and the SDK 2.4 notice.
func (ui *UI) renderOtherLocked(raw json.RawMessage) {
	var n struct {
		Kind string `json:"sessionUpdate"`
		acp.Notice
	}
	if json.Unmarshal(raw, &n) == nil && n.Kind == "notice" {
		// Information for the person, outside the answer.
		text := oneLine(n.Title, 200)
		if d := strings.TrimSpace(n.Description); d != "" {
			text += ": " + termsafe.Text(d)
		}
		mark := "ℹ"
		if n.Severity == "warning" || n.Severity == "error" {
			mark = "⚠"
		}
		ui.noteLocked("%s %s", mark, text)
		return
	}
	c, ok := acp.ParseCompactionUpdate(raw)
	if !ok {
		return
	}
	switch c.Status {
	case acp.CompactionInProgress:
		ui.startSpinLocked("compacting the conversation")
	case acp.CompactionCompleted:
		text := "compacted the conversation"
		for _, b := range c.Summary {
			if b.Text != nil && strings.TrimSpace(b.Text.Text) != "" {
				text = oneLine(b.Text.Text, 200)
				break
			}
		}
		ui.noteLocked("✓ %s (the full history stays stored)", text)
		ui.startSpinLocked("waiting for the model")
	case acp.CompactionFailed:
		msg := "no reason given"
		if c.Error != nil {
			msg = oneLine(*c.Error, 200)
		}
		ui.noteLocked("✗ %s", msg)
		ui.startSpinLocked("waiting for the model")
	case acp.CompactionCancelled:
		ui.noteLocked("✗ compaction cancelled")
	}
}

func kindSuffix(k acp.ToolKind) string {
	if k == "" || k == acp.ToolKindOther {
		return ""
	}
	return " [" + string(k) + "]"
}

// failureText is the first line of a failed tool call's text content.
func failureText(content []acp.ToolCallContent) string {
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			if line := oneLine(c.Content.Content.Text.Text, 120); line != "" {
				return ": " + line
			}
		}
	}
	return ""
}

// oneLine is untrusted text shortened to one line of about n runes, safe
// to print.
func oneLine(s string, n int) string {
	return termsafe.Line(transcript.OneLine(s, n))
}

// noteLocked writes one line about the work to stderr.
func (ui *UI) noteLocked(format string, args ...any) {
	ui.live.drawn = 0 // what follows is written below the live lines: they stay
	ui.stopSpinLocked()
	ui.flushAnswerLocked()
	ui.endThoughtLocked()
	ui.breakLineLocked()
	fmt.Fprintf(ui.errw, format+"\n", args...)
}

// Status writes one line about the session to stderr.
func (ui *UI) Status(format string, args ...any) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.noteLocked("%s", ui.dim(termsafe.Text(fmt.Sprintf(format, args...))))
}

// breakLineLocked ends a half-written line of the answer before stderr
// writes when both go to the same terminal.
func (ui *UI) breakLineLocked() {
	if ui.midLine && ui.outTTY && ui.errTTY {
		fmt.Fprintln(ui.out)
		ui.midLine = false
	}
}

// flushAnswerLocked writes what the answer's renderer holds back.
func (ui *UI) flushAnswerLocked() {
	if ui.opt.Answer != nil {
		ui.opt.Answer.Flush()
	}
}

func (ui *UI) endThoughtLocked() {
	if ui.folded > 0 {
		n := ui.folded
		ui.folded = 0
		ui.breakLineLocked()
		fmt.Fprintln(ui.errw, ui.dim(fmt.Sprintf("✻ thought (%s; --thoughts shows the reasoning)", transcript.Plural(n, "word"))))
	}
	if ui.thinking {
		fmt.Fprintln(ui.errw)
		ui.thinking = false
	}
}

func (ui *UI) dim(s string) string {
	if !ui.errTTY || ui.opt.NoColor {
		return s
	}
	return "\x1b[2m" + s + "\x1b[0m"
}

// Finish ends the answer with a newline and stops progress.
func (ui *UI) Finish() {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.live = liveView{}
	ui.stopSpinLocked()
	ui.endThoughtLocked()
	if ui.opt.Answer != nil {
		ui.opt.Answer.End()
	}
	if ui.midLine {
		fmt.Fprintln(ui.out)
		ui.midLine = false
	}
}

// Close stops the progress line for good.
func (ui *UI) Close() {
	ui.mu.Lock()
	ui.stopSpinLocked()
	ui.mu.Unlock()
}

// --- permission ---

// askPermission answers a permission request: --yes allows once, a person
// at a terminal chooses, and without either the request is refused.
func (ui *UI) askPermission(p *acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	title := termsafe.Line(p.ToolCall.Title)
	if title == "" {
		title = ui.titles[p.ToolCall.ToolCallID]
	}
	pick := func(kinds ...acp.PermissionOptionKind) (acp.PermissionOption, bool) {
		for _, k := range kinds {
			for _, o := range p.Options {
				if o.Kind == k {
					return o, true
				}
			}
		}
		return acp.PermissionOption{}, false
	}
	selected := func(o acp.PermissionOption) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: "selected", OptionID: o.OptionID}}
	}
	refuse := func() acp.RequestPermissionResponse {
		if o, ok := pick(acp.PermissionRejectOnce, acp.PermissionRejectAlways); ok {
			return selected(o)
		}
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: "cancelled"}}
	}

	if ui.opt.Yes {
		if o, ok := pick(acp.PermissionAllowOnce, acp.PermissionAllowAlways); ok {
			ui.noteLocked("✓ allowed (--yes): %s", title)
			return selected(o)
		}
	}
	if !ui.inTTY && ui.opt.ReadLine == nil { // the chat reads answers from its input, terminal or not
		ui.noteLocked("✗ refused: %s — exec cannot ask without a terminal; rerun with --yes to allow", title)
		return refuse()
	}
	ui.stopSpinLocked()
	ui.flushAnswerLocked()
	ui.endThoughtLocked()
	ui.breakLineLocked()
	ui.writeQuestionLocked(p, title)
	for i, o := range p.Options {
		fmt.Fprintf(ui.errw, "  %d) %s\n", i+1, termsafe.Line(o.Name))
	}
	for {
		prompt := fmt.Sprintf("choose 1-%d: ", len(p.Options))
		line, err := ui.readAnswerLocked(prompt)
		if err != nil && line == "" {
			fmt.Fprintln(ui.errw)
			ui.noteLocked("✗ refused: %s (no answer)", title)
			return refuse()
		}
		n, convErr := strconv.Atoi(strings.TrimSpace(line))
		if convErr == nil && n >= 1 && n <= len(p.Options) {
			o := p.Options[n-1]
			if o.Kind == acp.PermissionRejectOnce || o.Kind == acp.PermissionRejectAlways {
				ui.noteLocked("✗ %s: %s", termsafe.Line(o.Name), title)
			}
			ui.startSpinLocked("running " + title)
			return selected(o)
		}
	}
}

// --- progress ---

// Waiting starts the progress line with a label.
func (ui *UI) Waiting(label string) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.startSpinLocked(label)
}

// StopProgress removes the progress line.
func (ui *UI) StopProgress() {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.stopSpinLocked()
}

func (ui *UI) startSpinLocked(label string) {
	if !ui.progressEnabled {
		return
	}
	if ui.spin != nil {
		ui.spin.label = label
		ui.spin.start = time.Now()
		return
	}
	ui.breakLineLocked()
	ui.spin = &spinner{label: label, start: time.Now(), stop: make(chan struct{})}
	go ui.spinLoop(ui.spin)
}

// stopSpinLocked stops the spinner and clears its line. The spinner
// goroutine draws only under mu and only while not stopped, so nothing is
// drawn after this returns.
func (ui *UI) stopSpinLocked() {
	s := ui.spin
	if s == nil {
		return
	}
	ui.spin = nil
	s.stopped = true
	close(s.stop)
	if s.drawn {
		fmt.Fprint(ui.errw, "\r\x1b[2K")
	}
}

// spinner is the progress line: a frame, what is awaited, and for how long.
type spinner struct {
	label   string
	start   time.Time
	drawn   bool
	stopped bool
	stop    chan struct{}
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (ui *UI) spinLoop(s *spinner) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ui.mu.Lock()
		if s.stopped {
			ui.mu.Unlock()
			return
		}
		elapsed := time.Since(s.start).Truncate(100 * time.Millisecond)
		fmt.Fprintf(ui.errw, "\r\x1b[2K%s %s… %.1fs", spinFrames[i%len(spinFrames)], s.label, elapsed.Seconds())
		s.drawn = true
		ui.mu.Unlock()
	}
}

// readAnswerLocked shows prompt and reads one answer: with the chat's line
// editor when it owns the input, else a line of stdin. Reading may take
// long: ui.mu is released meanwhile so that Ctrl-C can cancel the turn.
func (ui *UI) readAnswerLocked(prompt string) (string, error) {
	if ui.opt.ReadLine != nil {
		ui.mu.Unlock()
		defer ui.mu.Lock()
		return ui.opt.ReadLine(prompt)
	}
	if ui.lines == nil {
		ui.lines = bufio.NewReader(ui.in)
	}
	fmt.Fprint(ui.errw, prompt)
	ui.mu.Unlock()
	defer ui.mu.Lock()
	return ui.lines.ReadString('\n')
}
