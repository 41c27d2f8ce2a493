package main

import (
	"context"
	"fmt"
	"runtime"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func runVersion(_ context.Context, e *env, args []string) int {
	fs := newFlagSet("version", "Usage: crow-acp version\n\nPrints the version of crow-acp and the Go toolchain it was built with.\n")
	pos, err := parseArgs(fs, args, e)
	if err == nil {
		err = wantArgs(fs, pos, 0, 0, "")
	}
	if err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.std.out, "crow-acp %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
