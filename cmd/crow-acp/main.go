// Command crow-acp is an Agent Client Protocol (ACP) coding agent: editors
// launch it as a subprocess and speak JSON-RPC over its stdin and stdout.
// From a shell it also runs one-off prompts (exec), manages stored sessions,
// checks a set-up (doctor) and shows its configuration.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client that closes our stdout must not kill us with SIGPIPE: the
	// write fails with EPIPE instead, and serving stops cleanly, keeping
	// what the running turns streamed. (Notify, not Ignore: commands we
	// run get the default SIGPIPE back on exec.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Getenv))
}

// stdio is the process's three streams; tests pass pipes or a terminal.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// Exit codes. They are documented in the README and in `crow-acp --help`.
const (
	exitOK          = 0   // success; doctor: every check passed
	exitError       = 1   // a runtime failure (store, model endpoint); doctor: a check failed
	exitUsage       = 2   // bad command line or configuration
	exitNotFound    = 3   // the session named does not exist
	exitIncomplete  = 4   // exec: the turn stopped early (max tokens, max model calls, refusal)
	exitInternal    = 70  // an internal error (a bug); the stack is on stderr (sysexits' EX_SOFTWARE)
	exitInterrupted = 130 // exec: cancelled with Ctrl-C (128 + SIGINT)
)

// run is the whole program behind main, reusable in-process by tests.
func run(ctx context.Context, args []string, std stdio, getenv func(string) string) (code int) {
	defer recoverMain(std.err, &code)
	return dispatch(ctx, &env{std: std, getenv: getenv}, args)
}

// recoverMain turns a panic that reached the top of the program (a bug
// outside the request handlers and the agent's goroutines, which recover on
// their own) into exit code 70 and its stack on stderr: not Go's 2, which
// here means "bad command line".
func recoverMain(stderr io.Writer, code *int) {
	if p := recover(); p != nil {
		fmt.Fprintf(stderr, "crow-acp: internal error (a bug; please report it with this message): %v\n\n%s", p, debug.Stack())
		*code = exitInternal
	}
}
