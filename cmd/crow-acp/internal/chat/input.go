package chat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chzyer/readline"
)

// errInterrupt is Ctrl-C at a prompt.
var errInterrupt = readline.ErrInterrupt

// lineReader reads what the person types.
type lineReader interface {
	// ReadLine shows prompt and reads one line; errInterrupt for Ctrl-C
	// (with what was typed), io.EOF for Ctrl-D on an empty line.
	ReadLine(prompt string) (string, error)
	// Remember adds an entry to the history kept across runs.
	Remember(entry string)
	Close() error
}

// editor is the line editor on a terminal: chzyer/readline, with the
// history in a file and completion of slash commands.
type editor struct {
	rl     *readline.Instance
	stdin  io.Closer // readline's Close does not close it: a read in progress would never end
	out    io.Writer
	closed atomic.Bool // Close runs at SIGTERM and again at exit: once
	// idle holds a token while no line is read: Close takes it (bounded)
	// before closing readline, whose raw-mode state a read in progress
	// would race with.
	idle chan struct{}
	// inRead is set while Readline runs: readline itself says it reads
	// only once its input loop waits for a key, after it drew the prompt.
	inRead atomic.Bool
	// prefill is the text the next line starts with (Prefill).
	prefill atomic.Pointer[string]
}

// Prefill puts text in the line being read, or the next one: what the
// person edits and sends again (a prompt /rewind took back).
func (e *editor) Prefill(text string) {
	text = strings.ReplaceAll(text, "\n", pasteNewline)
	if e.inRead.Load() {
		e.rl.Operation.SetBuffer(text)
		return
	}
	e.prefill.Store(&text)
}

func newEditor(in io.Reader, out io.Writer, historyFile string, complete completer) (*editor, error) {
	if historyFile != "" {
		// The prompts may be private: the file is the person's alone.
		_ = os.MkdirAll(filepath.Dir(historyFile), 0o700)
		if f, err := os.OpenFile(historyFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			f.Close()
		}
	}
	cfg := &readline.Config{
		Prompt:                 "> ",
		HistoryFile:            historyFile,
		HistoryLimit:           1000,
		DisableAutoSaveHistory: true, // permission answers are not history
		AutoComplete:           complete,
		Stdout:                 out,
		Stderr:                 out,
	}
	// The input is wrapped so that Close ends a read that waits (a plain
	// *os.File read would not end), and pasted text stays one line.
	if in == io.Reader(os.Stdin) {
		in = readline.Stdin
	}
	stdin := readline.NewCancelableStdin(&pasteFilter{r: in})
	cfg.Stdin = stdin
	rl, err := readline.NewEx(cfg)
	if err != nil {
		return nil, fmt.Errorf("line editor: %w", err)
	}
	fmt.Fprint(out, pasteOn)
	e := &editor{rl: rl, out: out, stdin: stdin, idle: make(chan struct{}, 1)}
	e.idle <- struct{}{}
	return e, nil
}

func (e *editor) ReadLine(prompt string) (string, error) {
	e.rl.SetPrompt(prompt)
	return e.readShown()
}

// readShown reads one line with the prompt the editor has: the chat's
// screen sets it, and may change it while the line is read.
func (e *editor) readShown() (string, error) {
	<-e.idle
	defer func() { e.idle <- struct{}{} }()
	if e.closed.Load() {
		return "", io.EOF
	}
	e.inRead.Store(true)
	first := ""
	if p := e.prefill.Swap(nil); p != nil {
		first = *p
	}
	line, err := e.rl.ReadlineWithDefault(first)
	e.inRead.Store(false)
	return unpaste(line), err
}

// Remember keeps entry in the history file, one line an entry.
func (e *editor) Remember(entry string) {
	_ = e.rl.SaveHistory(strings.ReplaceAll(entry, "\n", pasteNewline))
}

func (e *editor) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	fmt.Fprint(e.out, pasteOff)
	_ = e.stdin.Close() // ends a read in progress
	select {
	case <-e.idle:
	case <-time.After(2 * time.Second):
	}
	return e.rl.Close()
}

// completer completes the slash command being typed at the start of the
// line, and the path after an "@" anywhere in it.
type completer struct {
	commands func(prefix string) []string
	paths    func(typed string) []string // slash paths beneath the project
}

func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	typed := string(line[:pos])
	word := typed[strings.LastIndexAny(typed, " \t\n")+1:]
	if strings.HasPrefix(word, "@") && c.paths != nil {
		typedPath := word[1:]
		_, base := path.Split(typedPath)
		var out [][]rune
		for _, p := range c.paths(typedPath) {
			suffix := strings.TrimPrefix(p, typedPath)
			if !strings.HasSuffix(p, "/") {
				suffix += " " // a file ends the word; a directory goes on
			}
			out = append(out, []rune(suffix))
		}
		return out, len([]rune(base))
	}
	if !strings.HasPrefix(typed, "/") || strings.ContainsAny(typed, " \n") || c.commands == nil {
		return nil, 0
	}
	var out [][]rune
	for _, name := range c.commands(typed) {
		out = append(out, []rune(strings.TrimPrefix(name, typed)+" "))
	}
	return out, len([]rune(typed))
}

// plainReader reads lines from a pipe or a dumb terminal: no editing, and
// the prompt is shown only where someone types. Lines are read in the
// background so that Close (SIGTERM) ends a wait for one.
type plainReader struct {
	out    io.Writer
	prompt bool
	lines  chan lineResult
	done   chan struct{}
	once   sync.Once
}

type lineResult struct {
	line string
	err  error
}

func newPlainReader(in io.Reader, out io.Writer, showPrompt bool) *plainReader {
	p := &plainReader{out: out, prompt: showPrompt, lines: make(chan lineResult), done: make(chan struct{})}
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadString('\n')
			if errors.Is(err, io.EOF) && line != "" {
				err = nil
			}
			select {
			case p.lines <- lineResult{strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), err}:
			case <-p.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

func (p *plainReader) ReadLine(prompt string) (string, error) {
	if p.prompt {
		fmt.Fprint(p.out, prompt)
	}
	select {
	case r, ok := <-p.lines:
		if !ok {
			return "", io.EOF
		}
		if r.err != nil {
			close(p.lines) // every later read sees the end too
		}
		return r.line, r.err
	case <-p.done:
		return "", io.EOF
	}
}

func (p *plainReader) Remember(string) {}

func (p *plainReader) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// matching are the names that start with prefix, sorted.
func matching(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
