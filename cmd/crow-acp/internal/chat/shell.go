package chat

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Bounds of a !command's output: what the model is offered (its first and
// last bytes, the middle cut with a note), how many lines are shown live,
// and how long a line is shown. The commands are the user's own: they run
// with the user's rights and no time limit; Ctrl-C stops one.
const (
	maxShellHead      = 8 << 10
	maxShellTail      = 24 << 10
	maxShellShown     = 2000
	maxShellLineRunes = 1000
	maxShellRuns      = 4 // runs offered at once; older ones are dropped
	shellStopGrace    = 2 * time.Second
)

// shellRun is a !command that ran, kept to be offered to the model.
type shellRun struct {
	command string
	output  string // head and tail, the middle cut with a note
	status  string // "exit status 0", "stopped (Ctrl-C)"
}

// block is what the model is told in the next prompt.
func (r shellRun) block() acp.ContentBlock {
	out := strings.TrimRight(r.output, "\n")
	fence := "```"
	for strings.Contains(out, fence) {
		fence += "`"
	}
	return acp.TextBlock(fmt.Sprintf("I ran this command myself in the project directory (%s):\n%s\n%s\nIt printed:\n%s\n%s\n%s",
		r.status, fence, r.command, fence, out, fence))
}

// runShell runs command with sh -c in dir, writing its output (stdout and
// stderr as they come) to show, until it ends or stop is closed.
func runShell(dir, command string, show io.Writer, stop <-chan struct{}) shellRun {
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Ctrl-C reaches its group, stopped by the chat
	cmd.WaitDelay = shellStopGrace                        // a background child keeping the output open
	kept := &headTail{}
	w := &shellView{out: show}
	sink := io.MultiWriter(kept, w)
	cmd.Stdout, cmd.Stderr = sink, sink
	run := shellRun{command: command}
	if err := cmd.Start(); err != nil {
		run.status = "it did not start: " + err.Error()
		return run
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	stopped := false
	select {
	case err = <-done:
	case <-stop:
		stopped = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case err = <-done:
		case <-time.After(shellStopGrace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	w.end()
	run.output = kept.String()
	var exit *exec.ExitError
	switch {
	case stopped:
		run.status = "stopped with Ctrl-C"
	case err == nil:
		run.status = "exit status 0"
	case errors.As(err, &exit):
		run.status = fmt.Sprintf("exit status %d", exit.ExitCode())
	default:
		run.status = err.Error()
	}
	return run
}

// headTail keeps the first maxShellHead and the last maxShellTail bytes
// written.
type headTail struct {
	mu   sync.Mutex
	head []byte
	tail []byte
	cut  int
}

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	if room := maxShellHead - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	h.tail = append(h.tail, p...)
	if over := len(h.tail) - maxShellTail; over > 0 {
		h.cut += over
		h.tail = append(h.tail[:0], h.tail[over:]...)
	}
	return n, nil
}

func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := string(h.head)
	if h.cut > 0 {
		s += fmt.Sprintf("\n[… %s of output cut here …]\n", transcript.Plural(h.cut, "byte"))
	}
	return strings.ToValidUTF8(s+string(h.tail), "\uFFFD")
}

// shellView shows a command's output as it comes, a line at a time, made
// safe for the terminal: a progress bar's carriage returns keep its last
// state, and after maxShellShown lines only how many more there were.
type shellView struct {
	mu      sync.Mutex
	out     io.Writer
	partial []byte
	shown   int
}

func (v *shellView) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := strings.IndexByte(string(p), '\n')
		if i < 0 {
			v.partial = append(v.partial, p...)
			if len(v.partial) > 4*maxShellLineRunes {
				v.partial = v.partial[len(v.partial)-4*maxShellLineRunes:]
			}
			break
		}
		v.partial = append(v.partial, p[:i]...)
		v.line()
		p = p[i+1:]
	}
	return n, nil
}

func (v *shellView) line() {
	l := string(v.partial)
	v.partial = v.partial[:0]
	if i := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); i >= 0 {
		l = l[i+1:]
	}
	l = strings.TrimRight(l, "\r")
	v.shown++
	if v.shown > maxShellShown {
		return
	}
	if r := []rune(l); len(r) > maxShellLineRunes {
		l = string(r[:maxShellLineRunes-1]) + "…"
	}
	fmt.Fprintf(v.out, "  │ %s\n", termsafe.Line(l))
}

// end shows the last unfinished line and how much was not shown.
func (v *shellView) end() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.partial) > 0 {
		v.line()
	}
	if v.shown > maxShellShown {
		fmt.Fprintf(v.out, "  … %s more not shown\n", transcript.Plural(v.shown-maxShellShown, "line"))
	}
}
