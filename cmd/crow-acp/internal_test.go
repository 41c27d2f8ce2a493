package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

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
