package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestExecContinueSendsHistory: --session continues a stored session, and
// the model receives the earlier conversation with the new prompt.
func TestExecContinueSendsHistory(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	m.Enqueue(fakemodel.Reply{Text: "first answer"}, fakemodel.Reply{Text: "second answer"})
	env := fixture.NewEnv(t)
	vars := map[string]string{"OPENAI_BASE_URL": m.URL(), "CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb}, func(k string) string { return vars[k] })
		return code, out.String(), errb.String()
	}
	code, out, errs := cli("exec", "--cwd", env.Dir, "remember the word kestrel")
	if code != exitOK || out != "first answer\n" {
		t.Fatalf("first exec: %d %q %q", code, out, errs)
	}
	id := sessionRE.FindString(errs)
	if id == "" {
		t.Fatalf("no session id on stderr: %q", errs)
	}
	code, out, errs = cli("exec", "--session", id, "which word?")
	if code != exitOK || out != "second answer\n" {
		t.Fatalf("second exec: %d %q %q", code, out, errs)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for _, want := range []string{"remember the word kestrel", "first answer", "which word?"} {
		if !bytes.Contains(reqs[1], []byte(want)) {
			t.Errorf("second request lacks %q: %s", want, reqs[1])
		}
	}
	_, show, _ := cli("sessions", "show", id)
	if strings.Count(show, "── user") != 2 || strings.Count(show, "── assistant") != 2 {
		t.Errorf("stored session:\n%s", show)
	}
}

// execCommand is a command running exec in env against model (the
// chat tests' command, with exec's arguments).
func execCommand(t *testing.T, bin string, model *fakemodel.Server, env fixture.Env, args ...string) *exec.Cmd {
	return chatCommand(bin, model, env, append([]string{"exec", "--cwd", env.Dir}, args...)...)
}

// TestExecTerminal runs exec on a pseudo-terminal: the progress line is
// drawn while the model has not answered, then the answer streams.
func TestExecTerminal(t *testing.T) {
	bin := testBinary(t)

	t.Run("pty", func(t *testing.T) {
		m := fakemodel.Start()
		defer m.Close()
		// Each chunk waits 150 ms: the first arrives after the spinner has
		// had time to draw.
		m.Enqueue(fakemodel.Reply{Text: "answer from the model", DelayMS: 150})
		env := fixture.NewEnv(t)
		p := startPty(t, execCommand(t, bin, m, env, "hello"))
		code := p.wait()
		s := p.shown()
		if code != exitOK {
			t.Fatalf("exec: exit %d\n%s", code, s)
		}
		for _, want := range []string{"waiting for the model…", "answer from the model", "\x1b[2K", "done · continue with"} {
			if !strings.Contains(s, want) {
				t.Errorf("terminal output lacks %q:\n%q", want, s)
			}
		}
		// The spinner's line is cleared before the answer starts.
		if i, j := strings.LastIndex(s[:strings.Index(s, "answer")], "\x1b[2K"), strings.Index(s, "waiting for the model"); i < j {
			t.Errorf("progress not cleared before the answer:\n%q", s)
		}
	})

	t.Run("pty permission", func(t *testing.T) {
		m := fakemodel.Start()
		defer m.Close()
		m.Enqueue(
			fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "write_file", Arguments: `{"path":"NOTES.md","content":"hello\n"}`}}},
			fakemodel.Reply{Text: "written"},
		)
		env := fixture.NewEnv(t)
		p := startPty(t, execCommand(t, bin, m, env, "write a note"))
		p.expect("choose 1-")
		p.send("1\n") // the first option: allow once
		code := p.wait()
		s := p.shown()
		if code != exitOK {
			t.Fatalf("exec: exit %d\n%q", code, s)
		}
		for _, want := range []string{"⚙ Write NOTES.md", "? Write NOTES.md", "1) ", "✓ Write NOTES.md", "written"} {
			if !strings.Contains(s, want) {
				t.Errorf("terminal output lacks %q:\n%q", want, s)
			}
		}
		if b, err := os.ReadFile(env.Dir + "/NOTES.md"); err != nil || string(b) != "hello\n" {
			t.Errorf("NOTES.md after allowing: %q %v", b, err)
		}
	})

	t.Run("pipes refuse without --yes", func(t *testing.T) {
		m := fakemodel.Start()
		defer m.Close()
		m.Enqueue(
			fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "write_file", Arguments: `{"path":"NOTES.md","content":"hello\n"}`}}},
			fakemodel.Reply{Text: "not written"},
		)
		env := fixture.NewEnv(t)
		cmd := execCommand(t, bin, m, env, "write a note")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("exec: %v\n%s", err, errb.String())
		}
		if !strings.Contains(errb.String(), "refused: Write NOTES.md") || !strings.Contains(errb.String(), "--yes") {
			t.Errorf("stderr: %s", errb.String())
		}
		if _, err := os.Stat(env.Dir + "/NOTES.md"); err == nil {
			t.Errorf("NOTES.md was written without permission")
		}
	})

	t.Run("pipes", func(t *testing.T) {
		m := fakemodel.Start()
		defer m.Close()
		m.Enqueue(fakemodel.Reply{Text: "answer from the model", DelayMS: 150})
		env := fixture.NewEnv(t)
		cmd := execCommand(t, bin, m, env, "hello")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("exec: %v\n%s", err, errb.String())
		}
		if out.String() != "answer from the model\n" {
			t.Errorf("stdout %q", out.String())
		}
		if strings.Contains(errb.String(), "\x1b") || strings.Contains(errb.String(), "waiting") {
			t.Errorf("progress drawn without a terminal: %q", errb.String())
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		m := fakemodel.Start()
		defer m.Close()
		// Two words arrive, then the stream stalls until cancelled.
		m.Enqueue(fakemodel.Reply{Text: "partial answer that never ends", StallAfter: 3})
		env := fixture.NewEnv(t)
		cmd := execCommand(t, bin, m, env, "hello")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		got := ""
		for !strings.Contains(got, "answer") {
			b, err := r.ReadByte()
			if err != nil {
				t.Fatalf("stdout ended early: %q %s", got, errb.String())
			}
			got += string(b)
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		rest, _ := io.ReadAll(r)
		err = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
			t.Fatalf("exit %d (%v), want %d; stderr:\n%s", code, err, exitInterrupted, errb.String())
		}
		if !strings.Contains(errb.String(), "cancelled") {
			t.Errorf("stderr: %s", errb.String())
		}
		// What was streamed is stored, marked cancelled.
		show := exec.Command(bin, "sessions", "show", sessionRE.FindString(errb.String()))
		show.Env = cmd.Env
		text, err := show.CombinedOutput()
		if err != nil || !strings.Contains(string(text), "[cancelled]") || !strings.Contains(string(text), "partial answer") {
			t.Errorf("stored session (%v):\n%s\n(stdout was %q)", err, text, got+string(rest))
		}
	})
}
