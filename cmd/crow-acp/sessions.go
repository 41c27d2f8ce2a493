package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/crow-acp/crow-acp/agent"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
)

const sessionsUsage = `Usage:
  crow-acp sessions list [--cwd DIR] [--limit N] [--json] [--all] [--archived]
  crow-acp sessions show ID
  crow-acp sessions export ID [--format markdown|json] [--output FILE]
  crow-acp sessions import FILE...
  crow-acp sessions delete ID
  crow-acp sessions rename ID TITLE
  crow-acp sessions archive ID
  crow-acp sessions unarchive ID
  crow-acp sessions verify ID
  crow-acp sessions rebuild ID
  crow-acp sessions prune-frames --older-than DURATION

Manages the sessions stored in the database (the same ones editors load).
list prints the newest first (without never-prompted sessions unless --all,
without archived ones unless --archived); show prints one conversation as text; export
writes it as Markdown or as JSON (every message, compacted ones included, and
the compaction records); import stores such JSON exports (from another
machine, or from a database an unreleased build wrote); delete removes a
session and everything it owns; rename sets its title (no generated title replaces it); archive hides it
from lists (editors' too) until unarchive, keeping everything;
verify rebuilds a session's messages from its event log and reports every
difference from the live tables (exit 1 if any); rebuild prints the rebuilt
messages as JSON lines; prune-frames deletes raw frames older than DURATION
from the event log (the retention option; messages and lifecycle events stay).
A session id that does not exist exits with status 3.
`

func runSessions(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && isHelpFlag(args[0]) {
			fmt.Fprint(e.std.out, sessionsUsage)
			return exitOK
		}
		return e.fail(usagef("sessions: missing subcommand: list, show, export or delete (see crow-acp sessions --help)"))
	}
	sub, args := args[0], args[1:]
	var fn func(ctx context.Context, e *env, args []string) error
	switch sub {
	case "list", "ls":
		fn = sessionsList
	case "show":
		fn = sessionsShow
	case "export":
		fn = sessionsExport
	case "import":
		fn = sessionsImport // sessions_import.go
	case "delete", "rm":
		fn = sessionsDelete
	case "rename":
		fn = sessionsRename // sessions_meta.go
	case "archive":
		fn = sessionsArchive(true)
	case "unarchive":
		fn = sessionsArchive(false)
	case "verify":
		fn = sessionsVerify // sessions_verify.go
	case "rebuild":
		fn = sessionsRebuild
	case "prune-frames":
		fn = sessionsPruneFrames // sessions_prune.go
	default:
		return e.fail(usagef("sessions: unknown subcommand %q: use list, show, export, import, delete, rename, archive, unarchive, verify, rebuild or prune-frames", sub))
	}
	if err := fn(ctx, e, args); err != nil {
		return e.fail(err)
	}
	return exitOK
}

func isHelpFlag(s string) bool {
	return s == "-h" || s == "-help" || s == "--help"
}

// openExistingStore opens the database for a command that only reads or
// deletes: a database that does not exist yet is reported, not created.
func openExistingStore(ctx context.Context, cfg *config.Settings) (persistence.Store, bool, error) {
	if cfg.LocalDB() {
		if _, err := os.Stat(cfg.DB.V); errors.Is(err, os.ErrNotExist) {
			return nil, false, nil
		}
	}
	store, err := cfg.OpenStore(ctx)
	if err != nil {
		return nil, false, err
	}
	return store, true, nil
}

// sessionFlags parses the flags of a sessions subcommand.
func sessionFlags(name, synopsis string, args []string, e *env, define func(fs *flag.FlagSet)) ([]string, *config.Settings, error) {
	fs := newFlagSet("sessions "+name, synopsis)
	if define != nil {
		define(fs)
	}
	cf := config.AddFlags(fs, config.FlagsStore)
	// These commands only read (or delete from) the store: a setting
	// they never use, such as the model endpoint, must not stop them.
	pos, err := parseArgs(fs, args, e)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.LoadStore(cf, e.getenv)
	if err != nil {
		return nil, nil, err
	}
	return pos, cfg, nil
}

func sessionsList(ctx context.Context, e *env, args []string) error {
	var cwd string
	var limit int
	var asJSON, withEmpty, archived bool
	pos, cfg, err := sessionFlags("list", "Usage: crow-acp sessions list [--cwd DIR] [--limit N] [--json] [--all] [--archived]\n\nLists stored sessions, the most recently used first. Sessions that never had a message\n(an editor opens one per thread view) are left out unless --all, archived ones unless --archived.\n", args, e, func(fs *flag.FlagSet) {
		fs.BoolVar(&archived, "archived", false, "also list archived sessions")
		fs.StringVar(&cwd, "cwd", "", "only sessions whose project directory is DIR")
		fs.IntVar(&limit, "limit", 50, "list at most N sessions (0: all)")
		fs.BoolVar(&asJSON, "json", false, "print JSON lines, one session each")
		fs.BoolVar(&withEmpty, "all", false, "also list sessions that never had a message")
	})
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("sessions list: unexpected argument %q", pos[0])
	}
	if limit < 0 {
		return usagef("sessions list: --limit must not be negative")
	}
	store, ok, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintf(e.std.err, "no sessions yet (%s does not exist)\n", backend.Describe(cfg.DB.V))
		return nil
	}
	defer store.Close()

	keep := agent.ArchiveFilter("")
	if archived {
		keep = nil
	}
	all, err := listSessions(ctx, store, cwd, limit, withEmpty, keep)
	if err != nil {
		return err
	}
	if len(all) == 0 && !asJSON {
		fmt.Fprintf(e.std.err, "no sessions in %s\n", backend.Describe(cfg.DB.V))
		return nil
	}
	return transcript.WriteList(e.std.out, all, asJSON)
}

// listSessions reads up to limit sessions (0: all), newest first, through
// the pages of the store; without withEmpty the never-prompted ones are
// left out.
func listSessions(ctx context.Context, store agent.SessionStore, cwd string, limit int, withEmpty bool, keep func(*persistence.Session) bool) ([]persistence.Session, error) {
	var all []persistence.Session
	cursor := ""
	for {
		page := persistence.MaxListLimit
		if limit > 0 {
			page = min(limit-len(all), persistence.MaxListLimit)
		}
		opts := persistence.ListSessionsOptions{Cwd: cwd, Limit: page, Cursor: cursor}
		var ss []persistence.Session
		var next string
		var err error
		if withEmpty {
			ss, next, err = store.ListSessions(ctx, opts)
			ss = slices.DeleteFunc(ss, func(s persistence.Session) bool { return keep != nil && !keep(&s) })
		} else {
			ss, next, _, err = agent.ListShown(ctx, store, opts, keep)
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		all = append(all, ss...)
		if next == "" || (limit > 0 && len(all) >= limit) {
			break
		}
		cursor = next
	}
	return all, nil
}

// loadSession reads one session and its whole history.
func loadSession(ctx context.Context, store sessionReader, id string) (*persistence.SessionDump, error) {
	d, err := persistence.Dump(ctx, store, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, &notFoundError{id: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	return d, nil
}

// oneSession parses "ID" and opens the store for show, export and delete.
func oneSession(ctx context.Context, name, synopsis string, args []string, e *env, define func(fs *flag.FlagSet)) (persistence.Store, string, error) {
	pos, cfg, err := sessionFlags(name, synopsis, args, e, define)
	if err != nil {
		return nil, "", err
	}
	switch {
	case len(pos) == 0:
		return nil, "", usagef("sessions %s: missing session ID (crow-acp sessions list shows them)", name)
	case len(pos) > 1:
		return nil, "", usagef("sessions %s: unexpected argument %q", name, pos[1])
	}
	store, ok, err := openExistingStore(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", &notFoundError{id: pos[0]}
	}
	return store, pos[0], nil
}

// oneDump parses "ID", opens the store and reads the session, for show
// and delete; the caller closes the store.
func oneDump(ctx context.Context, name, synopsis string, args []string, e *env) (persistence.Store, *persistence.SessionDump, error) {
	store, id, err := oneSession(ctx, name, synopsis, args, e, nil)
	if err != nil {
		return nil, nil, err
	}
	d, err := loadSession(ctx, store, id)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, d, nil
}

func sessionsShow(ctx context.Context, e *env, args []string) error {
	store, d, err := oneDump(ctx, "show", "Usage: crow-acp sessions show ID\n\nPrints a session's details and its whole conversation as text,\ncompacted messages included and marked.\n", args, e)
	if err != nil {
		return err
	}
	defer store.Close()
	transcript.WriteText(e.std.out, d)
	return nil
}

func sessionsExport(ctx context.Context, e *env, args []string) error {
	var format, output string
	store, id, err := oneSession(ctx, "export", "Usage: crow-acp sessions export ID [--format markdown|json] [--output FILE]\n\nWrites a session as Markdown (for people) or JSON (every field, for tools).\n", args, e, func(fs *flag.FlagSet) {
		fs.StringVar(&format, "format", "markdown", "markdown or json")
		fs.StringVar(&output, "output", "", "write to FILE instead of stdout")
	})
	if err != nil {
		return err
	}
	defer store.Close()
	var write func(io.Writer, *persistence.SessionDump) error
	switch format {
	case "markdown", "md":
		write = transcript.WriteMarkdown
	case "json":
		write = transcript.WriteJSON
	default:
		return usagef("sessions export: unknown format %q: use markdown or json", format)
	}
	d, err := loadSession(ctx, store, id)
	if err != nil {
		return err
	}
	if output == "" {
		return write(e.std.out, d)
	}
	f, err := os.OpenFile(output, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := write(f, d); err != nil {
		f.Close()
		return fmt.Errorf("export: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(e.std.err, "exported %s (%d messages) to %s\n", termsafe.Line(id), len(d.Messages), output)
	return nil
}

func sessionsDelete(ctx context.Context, e *env, args []string) error {
	store, d, err := oneDump(ctx, "delete", "Usage: crow-acp sessions delete ID\n\nDeletes a session and everything stored with it. It cannot be undone:\nexport it first to keep a copy.\n", args, e)
	if err != nil {
		return err
	}
	defer store.Close()
	id := d.Session.ID
	if err := store.DeleteSession(ctx, id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	fmt.Fprintf(e.std.out, "deleted %s (%d messages)\n", termsafe.Line(id), len(d.Messages))
	return nil
}
