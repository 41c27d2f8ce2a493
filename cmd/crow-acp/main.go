// Command crow-acp is an Agent Client Protocol (ACP) coding agent: editors
// launch it as a subprocess and speak JSON-RPC over its stdin and stdout.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Getenv))
}

// stdio is the process's three streams; tests pass pipes.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // a runtime failure (store, serving)
	exitUsage = 2 // bad flags or configuration
)

// run is the whole program behind main, reusable in-process by tests.
func run(ctx context.Context, args []string, std stdio, getenv func(string) string) int {
	cfg, err := parseConfig(args, getenv, std.out)
	if err != nil {
		return exitCodeFor(err, std.err)
	}
	switch {
	case cfg.showVersion:
		writeLine(std.out, "crow-acp "+version)
		return exitOK
	}
	return serve(ctx, cfg, std)
}
