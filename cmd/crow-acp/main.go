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
