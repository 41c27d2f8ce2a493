package main

import (
	"context"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
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
		err = sessions.Migrate(ctx, e.io(), *from, *to, *verbose, e.getenv)
	}
	if err != nil {
		return e.fail(err)
	}
	return exitOK
}
