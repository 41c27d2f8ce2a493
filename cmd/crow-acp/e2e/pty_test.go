package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

// ptyProc is crow-acp (chat or exec) running on a pseudo-terminal, read
// as a person reads it: expect waits for text after what was already
// matched.
type ptyProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	out  syncbuf.Buffer
	mark int
	done chan struct{}
}

func startPty(t *testing.T, cmd *exec.Cmd) *ptyProc {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyProc{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			_, _ = p.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
	})
	return p
}

func (p *ptyProc) shown() string { return p.out.String() }

// expect waits until s appears after the last match and returns what
// was shown from there to the end of s.
func (p *ptyProc) expect(s string) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := p.shown()
		if i := strings.Index(all[p.mark:], s); i >= 0 {
			seen := all[p.mark : p.mark+i+len(s)]
			p.mark += i + len(s)
			return seen
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal never showed %q; after the last match it shows:\n%q", s, all[p.mark:])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *ptyProc) send(keys string) {
	p.t.Helper()
	if _, err := p.tty.Write([]byte(keys)); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *ptyProc) wait() int {
	p.t.Helper()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("crow-acp did not exit:\n%q", p.shown()[p.mark:])
	}
	select { // the terminal's last output is read (unless a child still holds it)
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	return p.cmd.ProcessState.ExitCode()
}

var allowRE = regexp.MustCompile(`(\d+)\) Allow\r?\n`)

// allow answers the permission question on screen with its Allow option
// and returns the question.
func (p *ptyProc) allow() string {
	p.t.Helper()
	q := p.expect("choose 1-")
	m := allowRE.FindStringSubmatch(q)
	if m == nil {
		p.t.Fatalf("no Allow option in:\n%q", q)
	}
	p.send(m[1] + "\r")
	return q
}
