package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestExecAskUser: exec asks the model's ask_user question at the
// terminal (a numbered choice) and the model reads the answer; on pipes,
// where nobody can answer, it says so and the model is told the user
// declined, even with --yes.
func TestExecAskUser(t *testing.T) {
	bin := testBinary(t)
	question := fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "ask_user",
		Arguments: `{"question":"Which \u001b[2Jdatabase?","choices":["SQLite","PostgreSQL"]}`}}}

	t.Run("pty", func(t *testing.T) {
		m := fakemodel.Start()
		defer m.Close()
		m.Enqueue(question, fakemodel.Reply{Text: "using it"})
		env := fixture.NewEnv(t)
		cmd := execCommand(t, bin, m, env, "set up storage")
		tty, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		var mu sync.Mutex
		var out bytes.Buffer
		copied := make(chan struct{})
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := tty.Read(buf)
				mu.Lock()
				out.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					close(copied)
					return
				}
			}
		}()
		waitFor := func(s string) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				seen := strings.Count(out.String(), s)
				mu.Unlock()
				if seen > 0 {
					return
				}
				if time.Now().After(deadline) {
					mu.Lock()
					t.Fatalf("no %q on the terminal:\n%q", s, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		waitFor("Answer (1-2, or empty to skip): ")
		_, _ = tty.Write([]byte("2\n"))
		waitFor("(or empty to skip): ")
		_, _ = tty.Write([]byte("\n"))
		err = cmd.Wait()
		<-copied
		mu.Lock()
		s := out.String()
		mu.Unlock()
		if err != nil {
			t.Fatalf("exec: %v\n%q", err, s)
		}
		if strings.Contains(s, "\x1b[2J") || !strings.Contains(s, "? Which ^[[2Jdatabase?") {
			t.Errorf("the question is not shown safely:\n%q", s)
		}
		if reqs := m.Requests(); len(reqs) != 2 || !bytes.Contains(reqs[1], []byte("The user answered: PostgreSQL")) {
			t.Errorf("the model did not get the answer: %d requests", len(reqs))
		}
	})

	t.Run("pipes decline", func(t *testing.T) {
		m := fakemodel.Start()
		defer m.Close()
		m.Enqueue(question, fakemodel.Reply{Text: "going on"})
		env := fixture.NewEnv(t)
		cmd := execCommand(t, bin, m, env, "--yes", "set up storage")
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader("1\n"), &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("exec: %v\n%s", err, errb.String())
		}
		if !strings.Contains(errb.String(), "not answered: Which ^[[2Jdatabase?") || !strings.Contains(errb.String(), "without a terminal") {
			t.Errorf("stderr: %s", errb.String())
		}
		if reqs := m.Requests(); len(reqs) != 2 || !bytes.Contains(reqs[1], []byte("The user declined to answer")) {
			t.Errorf("the model was not told: %d requests", len(reqs))
		}
	})
}
