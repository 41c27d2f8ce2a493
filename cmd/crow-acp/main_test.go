package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/fixture"
)

// The tests of this package run crow-acp in process, through run(): the
// ACP server over pipes (startInProcess, and fixture.PipeAgent for the
// fixtures) and the command lines (commandLines). The tests of the built
// binary are in ./e2e.

// TestMain removes what fixture.BuildBinary built (the test MCP server).
func TestMain(m *testing.M) { fixture.Main(m) }

// runInProcess runs crow-acp's run() with env, serving ACP over a pair of
// pipes: the test writes stdin and reads stdout. Closing stdin ends it; the
// cleanup checks that it then exits cleanly.
func runInProcess(t testing.TB, env map[string]string) (stdin io.WriteCloser, stdout io.Reader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), nil, stdio{in: inR, out: outW, err: io.Discard}, func(k string) string { return env[k] })
		outW.Close()
		done <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("crow-acp exited with %d", code)
			}
		case <-time.After(20 * time.Second):
			t.Error("crow-acp did not exit after stdin closed")
		}
	})
	return inW, outR
}

// startInProcess is crow-acp in process with env, and a client connected.
func startInProcess(t testing.TB, env map[string]string) *crowtest.Client {
	t.Helper()
	in, out := runInProcess(t, env)
	return crowtest.NewClient(t, in, out)
}

// commandLines returns a function that runs crow-acp command lines in process,
// with the variables of vars (as they are at each run) and an empty stdin;
// it returns the exit code, stdout and stderr.
func commandLines(vars map[string]string) func(args ...string) (code int, stdout, stderr string) {
	return func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb}, func(k string) string { return vars[k] })
		return code, out.String(), errb.String()
	}
}

// both is a command's exit code with its stdout and stderr together.
func both(code int, stdout, stderr string) (int, string) { return code, stdout + stderr }

// bugWriter stands for a bug anywhere on the main goroutine: writing to
// it panics.
type bugWriter struct{}

func (bugWriter) Write([]byte) (int, error) { panic("a bug in crow-acp") }

// TestInternalErrorExitCode: a panic that reaches the top of the program
// exits with 70 and its stack on stderr, never with 2 ("bad command line",
// Go's own code for a panic) and never on stdout.
func TestInternalErrorExitCode(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"version"}, stdio{in: strings.NewReader(""), out: bugWriter{}, err: &stderr},
		func(string) string { return "" })
	if code != exitInternal || exitInternal == exitUsage {
		t.Fatalf("exit code %d after a panic; want %d (internal error)", code, exitInternal)
	}
	if got := stderr.String(); !strings.Contains(got, "internal error (a bug") || !strings.Contains(got, "a bug in crow-acp") ||
		!strings.Contains(got, "runtime/debug.Stack") {
		t.Fatalf("stderr after a panic: %q; want the message and the stack", got)
	}
}
