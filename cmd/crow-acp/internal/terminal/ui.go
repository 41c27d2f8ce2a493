package terminal

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
	"golang.org/x/term"
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

func kindSuffix(k acp.ToolKind) string {
	if k == "" || k == acp.ToolKindOther {
		return ""
	}
	return " [" + string(k) + "]"
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

type liveView struct {
	id    string   // the tool call shown
	drawn int      // lines drawn in place (terminal), 0 when none
	shown []string // the lines shown so far (their last liveKeep)
}

// splitLines splits text into lines without a last empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
