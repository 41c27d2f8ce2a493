package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

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

// env is what a subcommand may use of its process.
type env struct {
	std    stdio
	getenv func(string) string
}

// newFlagSet returns a flag set whose --help prints usage (a synopsis and a
// description) followed by the flags.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprint(out, usage)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(out, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseArgs parses flags anywhere among the arguments ("exec 'fix it'
// --yes" works) and returns the positional arguments. Everything after "--"
// is positional. --help prints the usage to stdout and returns errHelp.
func parseArgs(fs *flag.FlagSet, args []string, e *env) ([]string, error) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(e.std.out)
			fs.Usage()
			return nil, errHelp
		}
		if err != nil {
			return nil, config.Usagef("%s: %v (see crow-acp %s --help)", fs.Name(), err, fs.Name())
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(fs *flag.FlagSet, pos []string, min, max int, what string) error {
	switch {
	case len(pos) < min:
		return config.Usagef("%s: missing %s (see crow-acp %s --help)", fs.Name(), what, fs.Name())
	case max >= 0 && len(pos) > max:
		return config.Usagef("%s: unexpected argument %q (see crow-acp %s --help)", fs.Name(), pos[max], fs.Name())
	}
	return nil
}

// fail reports err on stderr and returns the exit code it means.
func (e *env) fail(err error) int {
	err = safeError{err}
	var ce *config.Error
	var nf *sessions.NotFoundError
	switch {
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ce):
		fmt.Fprintf(e.std.err, "crow-acp: %v\n", err)
		return exitUsage
	case errors.As(err, &nf):
		fmt.Fprintf(e.std.err, "crow-acp: %v\n", err)
		return exitNotFound
	default:
		fmt.Fprintf(e.std.err, "crow-acp: %v\n", err)
		return exitError
	}
}

// errHelp means --help was asked for and printed.
var errHelp = errors.New("help requested")

// configured parses the flags of a subcommand that reads configuration and
// loads it.
func configured(fs *flag.FlagSet, cf *config.Flags, args []string, e *env) ([]string, *config.Settings, error) {
	pos, err := parseArgs(fs, args, e)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.Load(cf, e.getenv)
	if err != nil {
		return nil, nil, err
	}
	return pos, cfg, nil
}

// io is where a sessions subcommand writes.
func (e *env) io() sessions.IO { return sessions.IO{Out: e.std.out, Err: e.std.err} }

// safeError prints an error that may quote untrusted text (the model's
// words in a tool failure, an endpoint's error body) with its controls
// and escape sequences made visible; errors.Is and errors.As see the
// error it wraps.
type safeError struct{ err error }

func (s safeError) Error() string { return termsafe.Text(s.err.Error()) }

func (s safeError) Unwrap() error { return s.err }
