package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
	"github.com/crow-acp/crow-acp/persistence/storecopy"
)

const migrateUsage = `Usage: crow-acp migrate --from <store> --to <store> [-v]

Copies every session (messages, compaction records, its event log of frames
and lifecycle facts), and the permission rules of the sessions' project
directories, from one store to another, then proves the copy: each
session is read back from the destination and its content digest compared
with the source's, its events compared one by one, and every source session
must be listed by the destination. A store is what CROW_DB
takes: a SQLite file path or a postgres:// URL.

  crow-acp migrate --from ~/.local/share/crow-acp/crow.db --to postgres://crow@db/crow

Run it again at will: sessions the destination already holds with the same
content are skipped. A session the destination holds with other content is
never overwritten: it is reported and the exit code is 1. Times are compared
to the microsecond, which is what PostgreSQL keeps.
`

func runMigrate(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet("migrate", migrateUsage)
	from := fs.String("from", "", "the store to copy from: a SQLite file or a postgres:// URL")
	to := fs.String("to", "", "the store to copy into (created or migrated if needed)")
	verbose := fs.Bool("v", false, "print one line per session")
	pos, err := parseArgs(fs, args, e)
	if err == nil {
		err = wantArgs(fs, pos, 0, 0, "")
	}
	if err == nil {
		err = checkMigrateStores(*from, *to, e.getenv)
	}
	if err != nil {
		return e.fail(err)
	}
	*from, *to = config.ExpandHome(*from, e.getenv), config.ExpandHome(*to, e.getenv)

	src, err := openMigrateStore(ctx, "source", *from)
	if err != nil {
		return e.fail(err)
	}
	defer src.Close()
	dst, err := openMigrateStore(ctx, "destination", *to)
	if err != nil {
		return e.fail(err)
	}
	defer dst.Close()

	out := e.std.out
	fmt.Fprintf(out, "copying sessions from %s to %s\n", backend.Describe(*from), backend.Describe(*to))
	report, err := storecopy.Copy(ctx, dst, src, func(id, outcome string) {
		if *verbose || outcome == "conflict" {
			fmt.Fprintf(out, "  %-9s %s\n", outcome, termsafe.Line(id))
		}
	})
	if report != nil {
		fmt.Fprintf(out, "%s in the source: %d copied, %d already there and identical",
			transcript.Plural(report.Sessions, "session"), report.Copied, report.Identical)
		if n := len(report.Conflicts); n > 0 {
			fmt.Fprintf(out, ", %d in conflict (not copied)", n)
		}
		if n := len(report.Deleted); n > 0 {
			fmt.Fprintf(out, ", %d deleted from the source meanwhile", n)
		}
		fmt.Fprintf(out, "\nverified in the destination: %s, %s and %s; content digests match\n",
			transcript.Plural(report.Messages, "message"), transcript.Plural(report.Compactions, "compaction record"), transcript.Plural(report.Events, "event"))
		fmt.Fprintf(out, "permission rules of the sessions' projects: %d", report.Rules)
		if n := len(report.RuleConflicts); n > 0 {
			fmt.Fprintf(out, ", %d with the other decision in the destination (not copied): %s", n, strings.Join(report.RuleConflicts, ", "))
		}
		fmt.Fprintln(out)
	}
	if err != nil {
		return e.fail(fmt.Errorf("migrate: %w", err))
	}
	return exitOK
}

// checkMigrateStores rejects what would surely be a mistake before opening
// anything: a missing store, the same store twice, a source file that does
// not exist (opening it would create an empty database).
func checkMigrateStores(from, to string, getenv func(string) string) error {
	if from == "" || to == "" {
		return usagef("migrate: both --from and --to are required (see crow-acp migrate --help)")
	}
	for _, s := range []struct{ flag, dsn string }{{"--from", from}, {"--to", to}} {
		if _, err := backend.Parse(s.dsn); err != nil {
			return usagef("migrate: %s: %v", s.flag, err)
		}
	}
	from, to = config.ExpandHome(from, getenv), config.ExpandHome(to, getenv)
	if from == to {
		return usagef("migrate: --from and --to are the same store")
	}
	if kind, _ := backend.Parse(from); kind == backend.SQLite {
		if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
			return usagef("migrate: --from %s: no such database file", from)
		}
	}
	return nil
}

func openMigrateStore(ctx context.Context, role, dsn string) (persistence.Store, error) {
	s, err := backend.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("migrate: cannot open the %s %s: %w", role, backend.Describe(dsn), err)
	}
	return s, nil
}
