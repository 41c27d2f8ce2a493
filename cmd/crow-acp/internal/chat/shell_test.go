package chat

import (
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

// TestRunShell: a command runs with sh in the directory given, its output
// (stdout and stderr) is shown line by line, made safe, and kept for the
// model with its exit status.
func TestRunShell(t *testing.T) {
	dir := t.TempDir()
	var shown syncbuf.Buffer
	run := runShell(dir, `pwd; echo out; echo err >&2; printf 'a\033]0;x\007\n'; printf '10%%\r50%%\r100%%\n'; exit 3`, &shown, nil)
	if run.status != "exit status 3" {
		t.Errorf("status %q", run.status)
	}
	for _, want := range []string{"│ " + dir + "\n", "│ out\n", "│ err\n", "│ a^[]0;x^G\n", "│ 100%\n"} {
		if !strings.Contains(shown.String(), want) {
			t.Errorf("shown lacks %q:\n%q", want, shown.String())
		}
	}
	if strings.Contains(shown.String(), "\x1b") || strings.Contains(shown.String(), "10%") {
		t.Errorf("shown unsafely or with the progress bar's steps:\n%q", shown.String())
	}
	if !strings.Contains(run.output, "out\n") || !strings.Contains(run.output, "\x1b]0;x") {
		t.Errorf("kept output %q", run.output)
	}
	b := run.block()
	if b.Text == nil || !strings.Contains(b.Text.Text, "I ran this command myself") || !strings.Contains(b.Text.Text, "exit status 3") {
		t.Errorf("block %+v", b)
	}
}

// TestRunShellStops: closing stop ends a command (and what it started) at
// once.
func TestRunShellStops(t *testing.T) {
	var shown syncbuf.Buffer
	stop := make(chan struct{})
	done := make(chan shellRun, 1)
	start := time.Now()
	go func() { done <- runShell(t.TempDir(), "echo started; sleep 30 & sleep 30", &shown, stop) }()
	for !strings.Contains(shown.String(), "started") {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	select {
	case run := <-done:
		if run.status != "stopped with Ctrl-C" {
			t.Errorf("status %q", run.status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command was not stopped")
	}
}

// TestHeadTail: a long output keeps its start and end, and says how much
// of the middle is cut.
func TestHeadTail(t *testing.T) {
	var h headTail
	h.Write([]byte("START"))
	for range 100 {
		h.Write([]byte(strings.Repeat("m", 1000)))
	}
	h.Write([]byte("END\xff"))
	s := h.String()
	if !strings.HasPrefix(s, "START") || !strings.HasSuffix(s, "END\uFFFD") || !strings.Contains(s, "bytes of output cut here") {
		t.Errorf("kept %q…%q", s[:40], s[len(s)-40:])
	}
	if len(s) > maxShellHead+maxShellTail+200 {
		t.Errorf("kept %d bytes", len(s))
	}
	if got := (&headTail{}); got.String() != "" {
		t.Error("empty")
	}
}
