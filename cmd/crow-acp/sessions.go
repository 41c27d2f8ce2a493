package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
)

const sessionsUsage = `Usage:
  crow-acp sessions list [--cwd DIR] [--limit N] [--json] [--all] [--archived]
  crow-acp sessions show ID
  crow-acp sessions export ID [--format markdown|json] [--output FILE]
  crow-acp sessions import FILE...
  crow-acp sessions delete ID
  crow-acp sessions undo ID [--to N] [--dry-run] [--force]
  crow-acp sessions redo ID [--dry-run] [--force]
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
session and everything it owns; undo takes back what the agent did from a
prompt on (files and conversation; see sessions undo --help), redo takes
that back; rename sets its title (no generated title replaces it); archive hides it
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
		return e.fail(config.Usagef("sessions: missing subcommand: list, show, export or delete (see crow-acp sessions --help)"))
	}
	sub, args := args[0], args[1:]
	var fn func(ctx context.Context, e *env, args []string) error
	switch sub {
	case "list", "ls":
		fn = sessionsList
	case "show":
		fn = onOne("show", "Usage: crow-acp sessions show ID\n\nPrints a session's details and its whole conversation as text,\ncompacted messages included and marked.\n", sessions.Show)
	case "export":
		fn = sessionsExport
	case "import":
		fn = sessionsImport // sessions_import.go
	case "delete", "rm":
		fn = func(ctx context.Context, e *env, args []string) error {
			return onOne("delete", "Usage: crow-acp sessions delete ID\n\nDeletes a session and everything stored with it (its checkpoints and\nwork-tree snapshots too). It cannot be undone: export it first to keep a copy.\n",
				func(ctx context.Context, cfg *config.Settings, w sessions.IO, id string) error {
					return sessions.Delete(ctx, cfg, w, id, checkpoint.DefaultTreesDir(e.getenv))
				})(ctx, e, args)
		}
	case "undo":
		fn = sessionsUndo(false) // sessions_undo.go
	case "redo":
		fn = sessionsUndo(true)
	case "rename":
		fn = sessionsRename // sessions_meta.go
	case "archive":
		fn = sessionsArchive(true)
	case "unarchive":
		fn = sessionsArchive(false)
	case "verify":
		fn = onOne("verify", "Usage: crow-acp sessions verify ID\n\nRebuilds a session's messages from its event log and reports every\ndifference from the messages table. Exits 1 if there is any.\n", sessions.Verify)
	case "rebuild":
		fn = onOne("rebuild", "Usage: crow-acp sessions rebuild ID\n\nPrints the messages rebuilt from a session's event log, one JSON object\nper line (the live tables are not changed).\n", sessions.Rebuild)
	case "prune-frames":
		fn = sessionsPruneFrames // sessions_prune.go
	default:
		return e.fail(config.Usagef("sessions: unknown subcommand %q: use list, show, export, import, delete, undo, redo, rename, archive, unarchive, verify, rebuild or prune-frames", sub))
	}
	if err := fn(ctx, e, args); err != nil {
		return e.fail(err)
	}
	return exitOK
}

func sessionsList(ctx context.Context, e *env, args []string) error {
	var o sessions.ListOptions
	pos, cfg, err := sessionFlags("list", "Usage: crow-acp sessions list [--cwd DIR] [--limit N] [--json] [--all] [--archived]\n\nLists stored sessions, the most recently used first. Sessions that never had a message\n(an editor opens one per thread view) are left out unless --all, archived ones unless --archived.\n", args, e, func(fs *flag.FlagSet) {
		fs.BoolVar(&o.Archived, "archived", false, "also list archived sessions")
		fs.StringVar(&o.Cwd, "cwd", "", "only sessions whose project directory is DIR")
		fs.IntVar(&o.Limit, "limit", 50, "list at most N sessions (0: all)")
		fs.BoolVar(&o.JSON, "json", false, "print JSON lines, one session each")
		fs.BoolVar(&o.WithEmpty, "all", false, "also list sessions that never had a message")
	})
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return config.Usagef("sessions list: unexpected argument %q", pos[0])
	}
	if o.Limit < 0 {
		return config.Usagef("sessions list: --limit must not be negative")
	}
	return sessions.List(ctx, cfg, e.io(), o)
}

func sessionsExport(ctx context.Context, e *env, args []string) error {
	var format, output string
	cfg, id, err := oneSession("export", "Usage: crow-acp sessions export ID [--format markdown|json] [--output FILE]\n\nWrites a session as Markdown (for people) or JSON (every field, for tools).\n", args, e, func(fs *flag.FlagSet) {
		fs.StringVar(&format, "format", "markdown", "markdown or json")
		fs.StringVar(&output, "output", "", "write to FILE instead of stdout")
	})
	if err != nil {
		return err
	}
	return sessions.Export(ctx, cfg, e.io(), id, format, output)
}

func isHelpFlag(s string) bool {
	return s == "-h" || s == "-help" || s == "--help"
}
