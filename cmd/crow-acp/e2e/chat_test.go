package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestChatTerminal drives `crow-acp chat` in a real pseudo-terminal
// against the fake model, as a person would (issue 32): a streamed answer
// rendered as Markdown, an edit approved after its diff was shown, a
// command whose output is shown, a turn cancelled with Ctrl-C and the next
// one working, /compact, exit with Ctrl-D, then `chat --continue` showing
// the history and continuing it.
func TestChatTerminal(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)
	notes := filepath.Join(env.Dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	m.Enqueue(
		// 1: a Markdown answer, streamed word by word.
		fakemodel.Reply{Text: "# Plan\n\nThis is **bold** and `code`.\n\n```go\nfunc main() {}\n```\n\n- one\n- two\n"},
		// 2: an edit (read first: writes need a read).
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c2", Name: "write_file", Arguments: `{"path":"notes.txt","content":"alpha\ngamma\n"}`}}},
		fakemodel.Reply{Text: "Edited."},
		// 3: a command.
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{runCall("c3", "echo out-$((6*7))-marker")}},
		fakemodel.Reply{Text: "It printed."},
		// 4: a turn that stalls until cancelled, then one that works.
		fakemodel.Reply{Text: "never finishes this sentence", StallAfter: 1},
		fakemodel.Reply{Text: "Back again."},
		// 5: /compact's summary.
		fakemodel.Reply{Text: "The user edited notes.txt and ran a command."},
	)

	cmd := chatCommand(t, m, env, "chat")
	cmd.Env = append(cmd.Env, "CROW_COMPACT_KEEP_RECENT=2") // /compact has something to fold
	p := startPty(t, cmd)
	p.expect("/help for commands")
	p.expect("> ")

	p.send("make a plan\r")
	seen := p.expect("two")
	for _, want := range []string{"\x1b[1m\x1b[4mPlan", "\x1b[1mbold", "\x1b[36mcode", "• one"} {
		if !strings.Contains(seen, want) {
			t.Errorf("the answer is not rendered as Markdown (no %q):\n%q", want, seen)
		}
	}
	if strings.Contains(seen, "# Plan") || strings.Contains(seen, "```") {
		t.Errorf("Markdown syntax shown raw:\n%q", seen)
	}
	p.expect("> ")

	p.send("edit the notes\r")
	q := p.allow()
	for _, want := range []string{"changes to ", "-beta", "+gamma"} {
		if !strings.Contains(q, want) {
			t.Errorf("the permission question lacks %q:\n%q", want, q)
		}
	}
	p.expect("Edited.")
	if b, _ := os.ReadFile(notes); string(b) != "alpha\ngamma\n" {
		t.Errorf("notes.txt after the approved edit: %q", b)
	}
	p.expect("> ")

	p.send("run it\r")
	q = p.allow()
	if !strings.Contains(q, "echo out-$((6*7))-marker") {
		t.Errorf("the question does not show the command:\n%q", q)
	}
	out := p.expect("It printed.")
	if !regexp.MustCompile(`│(\x1b\[0m)? out-42-marker\r\n.*│(\x1b\[0m)? exit code 0`).MatchString(out) {
		t.Errorf("the command's output is not shown:\n%q", out)
	}
	p.expect("> ")

	before := len(m.Requests())
	p.send("stall\r")
	for len(m.Requests()) == before {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the first chunk is on its way
	p.send("\x03")
	p.expect("cancelled")
	p.expect("> ")
	p.send("hello again\r")
	p.expect("Back again.")
	p.expect("> ")
	// The store still answers after a Ctrl-C.
	p.send("/sessions\r")
	p.expect("make a plan")
	p.expect("> ")

	// The chat's own /mode lists the agent's modes and switches; the
	// status line follows.
	p.send("/mode\r")
	p.expect("▸ default")
	p.expect("> ")
	p.send("/mode plan\r")
	p.expect("mode: plan")
	// The status line (drawn above the prompt, which the line editor
	// keeps on screen) shows the new mode.
	p.expect("· plan")
	p.expect("> ")
	p.send("/mode default\r")
	p.expect("mode: default")
	p.expect("> ")

	p.send("/comp\t")
	p.expect("/compact")
	p.send("\r")
	p.expect("The user edited notes.txt")
	p.expect("> ")

	p.send("\x04")
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit code %d after Ctrl-D:\n%q", code, p.shown())
	}

	// --continue: the latest session of this directory, its history
	// shown, and the conversation goes on with it.
	m.Enqueue(fakemodel.Reply{Text: "Continued."})
	p = startPty(t, chatCommand(t, m, env, "chat", "--continue"))
	hist := p.expect("/help for commands")
	for _, want := range []string{"› make a plan", "› edit the notes", "Edited.", "› hello again", "Back again."} {
		if !strings.Contains(hist, want) {
			t.Errorf("the resumed history lacks %q:\n%q", want, hist)
		}
	}
	p.expect("> ")
	// The line editor's history is kept across runs (privately).
	p.send("\x1b[A")
	p.expect("/compact")
	p.send("\x03") // clears the line
	if st, err := os.Stat(filepath.Join(env.Tmp, "crow-acp", "chat_history")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("history file: %v %v", st, err)
	}
	// A line ending in a backslash goes on.
	p.send("what did we do?\\\r")
	p.expect("… ")
	p.send("in short\r")
	p.expect("Continued.")
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	for _, want := range []string{`what did we do?\nin short`, "The user edited notes.txt"} {
		if !bytes.Contains(last, []byte(want)) {
			t.Errorf("the continued turn's request lacks %q", want)
		}
	}
	p.expect("> ")
	p.send("\x03")
	p.expect("Ctrl-C again")
	p.send("\x03")
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit code %d after Ctrl-C twice", code)
	}
}

// TestBareCommandChatsOnlyInATerminal: a bare crow-acp on a terminal
// starts a chat with a note on how to get the server; with pipes (how
// editors spawn it) it serves ACP as before.
func TestBareCommandChatsOnlyInATerminal(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)

	p := startPty(t, chatCommand(t, m, env))
	p.expect(`"crow-acp serve" forces it`)
	p.expect("> ")
	p.send("\x04")
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit code %d", code)
	}

	cmd := chatCommand(t, m, env)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve over pipes: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), `"protocolVersion":1`) || strings.Contains(errb.String(), "starting a chat") {
		t.Errorf("with pipes crow-acp does not serve ACP:\nstdout %s\nstderr %s", out.String(), errb.String())
	}
}

// TestChatDegrades: with pipes the chat reads one prompt a line and writes
// plain text (Markdown as written, no escape sequence, no prompt); on a
// terminal NO_COLOR keeps the line editor but writes no colours, and
// TERM=dumb writes no escape sequence at all.
func TestChatDegrades(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)
	const answer = "# Title\n\nSome **bold** text."

	t.Run("pipes", func(t *testing.T) {
		m.Enqueue(fakemodel.Reply{Text: answer})
		cmd := chatCommand(t, m, env, "chat", "--cwd", env.Dir)
		cmd.Stdin = strings.NewReader("hello\n/quit\n")
		code, out, errs := runCmd(t, cmd)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, answer) || strings.Contains(out, "\x1b") || strings.Contains(out, "> ") {
			t.Errorf("chat over pipes:\n%q", out)
		}
	})

	for _, tc := range []struct{ name, env string }{{"NO_COLOR", "NO_COLOR=1"}, {"dumb", "TERM=dumb"}} {
		t.Run(tc.name, func(t *testing.T) {
			m.Enqueue(fakemodel.Reply{Text: answer})
			cmd := chatCommand(t, m, env, "chat")
			cmd.Env = append(cmd.Env, tc.env)
			p := startPty(t, cmd)
			p.expect("> ")
			p.send("hello\r")
			seen := p.expect("text.")
			if !strings.Contains(seen, "**bold**") || strings.Contains(seen, "\x1b[1m") || strings.Contains(seen, "\x1b[2m") {
				t.Errorf("the answer with %s:\n%q", tc.env, seen)
			}
			p.expect("> ")
			p.send("\x04")
			if code := p.wait(); code != exitOK {
				t.Fatalf("exit %d", code)
			}
			if tc.name == "dumb" && strings.Contains(p.shown(), "\x1b") {
				t.Errorf("TERM=dumb got escape sequences:\n%q", p.shown())
			}
		})
	}
}

// TestChatTerminated: SIGTERM ends the chat, at the prompt (the line
// editor stops waiting) and during a turn (the turn is cancelled first,
// so what was streamed is stored).
func TestChatTerminated(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)

	p := startPty(t, chatCommand(t, m, env, "chat"))
	p.expect("> ")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit %d after SIGTERM at the prompt", code)
	}

	m.Enqueue(fakemodel.Reply{Text: "partial words that stall here", StallAfter: 2})
	p = startPty(t, chatCommand(t, m, env, "chat"))
	p.expect("> ")
	before := len(m.Requests())
	p.send("stall\r")
	for len(m.Requests()) == before {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit %d after SIGTERM during a turn", code)
	}
	out, err := chatCommand(t, m, env, "sessions", "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stall") {
		t.Errorf("the terminated turn is not stored: %v\n%s", err, out)
	}
}

// TestChatAnswersQuestions: the model's ask_user question is asked in the
// chat (a form, as the chat advertises elicitation) and answered through
// the chat's own line editor, which owns the terminal's input.
func TestChatAnswersQuestions(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)
	m.Enqueue(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "q1", Name: "ask_user",
			Arguments: `{"question":"Which database?","choices":["SQLite","PostgreSQL"]}`}}},
		fakemodel.Reply{Text: "Going with the answer."},
	)
	p := startPty(t, chatCommand(t, m, env, "chat"))
	p.expect("> ")
	p.send("set up storage\r")
	q := p.expect("PostgreSQL")
	if !strings.Contains(q, "Which database?") {
		t.Errorf("the question is not shown:\n%q", q)
	}
	p.expect("): ")
	p.send("2\r")
	p.expect("own words") // the form's optional free-text field
	p.expect("): ")
	p.send("\r")
	p.expect("Going with the answer.")
	reqs := m.Requests()
	if last := reqs[len(reqs)-1]; !bytes.Contains(last, []byte("PostgreSQL")) || bytes.Contains(last, []byte("declined")) {
		t.Errorf("the model was not given the answer: %s", last)
	}
	p.expect("> ")
	p.send("\x04")
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit code %d after Ctrl-D:\n%q", code, p.shown())
	}
}

// TestChatPaste: text pasted into the chat (the terminal's bracketed
// paste) is one prompt, newlines kept, not a prompt per line.
func TestChatPaste(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)
	m.Enqueue(fakemodel.Reply{Text: "Got both lines."})
	p := startPty(t, chatCommand(t, m, env, "chat"))
	if shown := p.expect("> "); !strings.Contains(shown, "\x1b[?2004h") {
		t.Errorf("the chat did not turn on bracketed paste:\n%q", shown)
	}
	p.send("\x1b[200~first line\rsecond line\x1b[201~\r")
	p.expect("Got both lines.")
	p.expect("> ")
	reqs := m.Requests()
	if len(reqs) != 1 || !bytes.Contains(reqs[0], []byte(`first line\nsecond line`)) {
		t.Errorf("%d model requests, want one prompt with both lines: %s", len(reqs), reqs)
	}
	p.send("\x04")
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit code %d after Ctrl-D:\n%q", code, p.shown())
	}
	if !strings.Contains(p.shown(), "\x1b[?2004l") {
		t.Error("bracketed paste was left on at exit")
	}
}

// TestChatKeepsUp drives what terminal-agent users expect of the chat
// (issue 41) on a real pseudo-terminal: @ with Tab completes a path (the
// .gitignore'd directory is not offered) and the file's text reaches the
// model; !echo hi shows hi and its output goes with the next prompt; a
// prompt typed while a turn runs is queued and runs after it; a Markdown
// table is rendered as aligned columns.
func TestChatKeepsUp(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	env := fixture.NewEnv(t)
	for name, text := range map[string]string{
		"src/app.go":   "package app\n\n// MARKER-embedded-42\n",
		".gitignore":   "build/\n",
		"build/out.go": "package out\n",
	} {
		p := filepath.Join(env.Dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.Enqueue(
		fakemodel.Reply{Text: "Seen the file."},
		fakemodel.Reply{Text: "| Name | Size |\n|:--|--:|\n| app.go | 12 |\n| main.go | 3 |\n", DelayMS: 150},
		fakemodel.Reply{Text: "Second done."},
	)
	p := startPty(t, chatCommand(t, m, env, "chat"))
	p.expect("> ")

	// @ completion: "s" has one candidate (build/ is ignored, .gitignore
	// hidden), then the file in it.
	p.send("explain @s\t")
	p.expect("src/")
	p.send("\t")
	p.expect("app.go")
	p.send("\r")
	p.expect("Seen the file.")
	reqs := m.Requests()
	if last := reqs[len(reqs)-1]; !bytes.Contains(last, []byte("MARKER-embedded-42")) {
		t.Errorf("the attached file did not reach the model: %s", last)
	}
	p.expect("> ")

	p.send("!echo hi\r")
	if out := p.expect("exit status 0"); !regexp.MustCompile(`│ hi\r\n`).MatchString(out) {
		t.Errorf("!echo hi does not show hi:\n%q", out)
	}
	p.expect("> ")

	// A prompt typed while the (slow) turn streams is queued.
	before := len(m.Requests())
	p.send("show a table\r")
	for deadline := time.Now().Add(20 * time.Second); len(m.Requests()) == before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the prompt never reached the model")
		}
	}
	p.send("second prompt\r")
	p.expect("queued (1)")
	table := p.expect("main.go")
	p.expect("Second done.")
	plain := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(p.shown(), "")
	for _, want := range []string{"Name    │ Size", "app.go  │   12", "main.go │    3"} {
		if !strings.Contains(plain, want) {
			t.Errorf("the table is not aligned (no %q):\n%q", want, plain)
		}
	}
	if strings.Contains(table, "|:--") {
		t.Errorf("the table is shown raw:\n%q", table)
	}
	reqs = m.Requests()
	if len(reqs) != before+2 {
		t.Fatalf("%d model requests after the queued prompt, want %d", len(reqs), before+2)
	}
	if r := reqs[before]; !bytes.Contains(r, []byte("I ran this command myself")) || !bytes.Contains(r, []byte("echo hi")) {
		t.Errorf("the !command's output was not offered with the next prompt: %s", r)
	}
	if r := reqs[before+1]; !bytes.Contains(r, []byte("second prompt")) {
		t.Errorf("the queued prompt was not sent after the turn: %s", r)
	}
	p.expect("> ")
	p.send("\x04")
	if code := p.wait(); code != exitOK {
		t.Fatalf("exit code %d after Ctrl-D:\n%q", code, p.shown())
	}
}
