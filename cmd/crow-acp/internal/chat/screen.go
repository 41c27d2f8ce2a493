package chat

import (
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
)

// The line editor reads all the time on a terminal, during a turn too, so
// that a prompt can be typed (and queued) while the agent works. What the
// chat writes meanwhile goes through screen, which keeps the line being
// typed below it: readline clears the prompt, the text is written, the
// prompt is drawn again.

// progressClear starts every frame of the progress line
// (terminal.UI's spinner): on the screen the frame is shown in the prompt.
const progressClear = "\r\x1b[2K"

// screen is the terminal as the chat writes to it while the line editor
// reads: whole lines go above the prompt; an unfinished line is held back
// until it ends; progress frames become the prompt's start.
type screen struct {
	mu       sync.Mutex
	rl       *readline.Instance
	ed       *editor
	width    func() int // the terminal's: a progress frame is cut to fit one line with the prompt
	base     string     // the prompt: "> ", busyPrompt, a question's
	progress string     // the progress frame, "" when none
	partial  []byte
}

func newScreen(ed *editor, base string, width func() int) *screen {
	ed.rl.SetPrompt(base)
	return &screen{rl: ed.rl, ed: ed, base: base, width: width}
}

// reading reports whether readline shows the prompt and reads keys. A
// read just started draws the prompt before readline says it reads: that
// moment is waited out (briefly), or a write would land after the prompt
// and a new prompt would not be drawn.
func (s *screen) reading() bool {
	for i := 0; i < 100 && s.ed.inRead.Load() && !s.rl.Terminal.IsReading(); i++ {
		time.Sleep(time.Millisecond)
	}
	return s.rl.Terminal.IsReading()
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	str := string(p)
	if strings.HasPrefix(str, progressClear) && !strings.Contains(str, "\n") {
		s.progress = strings.TrimPrefix(str, progressClear)
		s.refreshLocked()
		return n, nil
	}
	data := append(s.partial, p...)
	s.partial = nil
	if !s.reading() {
		_, err := s.rl.Config.Stdout.Write(data)
		return n, err
	}
	i := strings.LastIndexByte(string(data), '\n')
	if i < 0 {
		s.partial = data
		return n, nil
	}
	s.partial = append([]byte(nil), data[i+1:]...)
	_, err := s.rl.Stdout().Write(data[:i+1])
	return n, err
}

// flush writes a held-back unfinished line.
func (s *screen) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) > 0 {
		data := append(s.partial, '\n')
		s.partial = nil
		_, _ = s.rl.Stdout().Write(data)
	}
}

// setBase changes the prompt, redrawn at once if a line is being read.
func (s *screen) setBase(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base = p
	s.refreshLocked()
}

func (s *screen) promptLocked() string {
	if s.progress == "" {
		return s.base
	}
	p := []rune(s.progress)
	if room := s.width() - len([]rune(s.base)) - 12; len(p) > room {
		p = append(p[:max(0, room-1)], '…')
	}
	return string(p) + "  " + s.base
}

func (s *screen) refreshLocked() {
	s.rl.SetPrompt(s.promptLocked())
	if s.reading() {
		s.rl.Refresh()
	}
}

// inputLine is one line read, or why none was.
type inputLine struct {
	text string
	err  error
}

// pump reads the line editor when a line is wanted, and hands each line
// on: to a question waiting for its answer, else to the chat. While the
// chat is busy (a turn, a !command) it reads without a pause, so that
// prompts can be typed and queued; at the prompt it reads one line at a
// time, when the chat asks, so that what a command printed is all written
// before the prompt is drawn again.
type pump struct {
	ed         *editor
	screen     *screen
	mu         sync.Mutex
	answer     chan inputLine // a question waits for the next line
	wantOne    bool           // the chat waits for a line
	continuous bool           // the chat is busy: read all the time
	wake       chan struct{}
	typed      chan inputLine
	done       chan struct{}
	once       sync.Once
}

func newPump(ed *editor, sc *screen) *pump {
	return &pump{ed: ed, screen: sc, typed: make(chan inputLine), done: make(chan struct{}), wake: make(chan struct{}, 1)}
}

func (p *pump) run() {
	for !p.ed.closed.Load() {
		p.mu.Lock()
		wanted := p.wantOne || p.continuous || p.answer != nil
		p.mu.Unlock()
		if !wanted {
			select {
			case <-p.wake:
				continue
			case <-p.done:
				return
			}
		}
		line, err := p.ed.readShown()
		r := inputLine{line, err}
		p.mu.Lock()
		a := p.answer
		p.answer = nil
		if a == nil {
			p.wantOne = false
		}
		p.mu.Unlock()
		if a != nil {
			a <- r
			continue
		}
		select {
		case p.typed <- r:
		case <-p.done:
			return
		}
		if err != nil && !errors.Is(err, errInterrupt) && !errors.Is(err, io.EOF) {
			return
		}
	}
	select {
	case p.typed <- inputLine{err: io.EOF}:
	case <-p.done:
	}
}

func (p *pump) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// request asks for the next line (it arrives on typed).
func (p *pump) request() {
	p.mu.Lock()
	p.wantOne = true
	p.mu.Unlock()
	p.poke()
}

// busy makes the pump read all the time (on) or only when asked (off).
func (p *pump) busy(on bool) {
	p.mu.Lock()
	p.continuous = on
	p.mu.Unlock()
	p.poke()
}

// ask shows prompt and returns the next line read, for a question asked
// while the chat does something else; quit ends the wait.
func (p *pump) ask(prompt string, quit <-chan struct{}) (string, error) {
	ch := make(chan inputLine, 1)
	p.mu.Lock()
	p.answer = ch
	p.mu.Unlock()
	p.screen.mu.Lock()
	before := p.screen.base
	p.screen.mu.Unlock()
	p.screen.setBase(prompt)
	p.poke()
	defer p.screen.setBase(before)
	select {
	case r := <-ch:
		return r.text, r.err
	case <-quit:
		return "", io.EOF
	case <-p.done:
		return "", io.EOF
	}
}

func (p *pump) stop() { p.once.Do(func() { close(p.done) }) }
