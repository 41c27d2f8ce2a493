package main

import (
	"bytes"
	"strings"
	"testing"

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
		p := startPty(t, execCommand(t, bin, m, env, "set up storage"))
		p.expect("Answer (1-2, or empty to skip): ")
		p.send("2\n")
		p.expect("(or empty to skip): ") // the optional own words
		p.send("\n")
		code := p.wait()
		s := p.shown()
		if code != exitOK {
			t.Fatalf("exec: exit %d\n%q", code, s)
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
