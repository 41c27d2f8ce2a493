package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
	"github.com/crow-acp/crow-acp/persistence"
)

const importSynopsis = `Usage: crow-acp sessions import FILE...

Stores sessions written by crow-acp sessions export --format json (this
version's or an earlier one's): every message, compacted ones included,
and the compaction records, under the session's own id. Editors can then
load them as before. The frame log is not part of an export: an imported
session's log starts with the import. A session the database already
holds is left as it is and reported (exit 1).

This is how sessions move between machines, and out of a database an
unreleased development build wrote (which this version refuses to open):
export them with the build that wrote it, move that database aside, and
import the files here.
`

// sessionsImport stores JSON exports in the database, each in one
// transaction.
func sessionsImport(ctx context.Context, e *env, args []string) error {
	files, cfg, err := sessionFlags("import", importSynopsis, args, e, nil)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("sessions import: missing FILE (a session exported with crow-acp sessions export ID --format json)")
	}
	store, err := cfg.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	var failed int
	for _, name := range files {
		id, n, err := importFile(ctx, store, name)
		if err != nil {
			failed++
			fmt.Fprintf(e.std.err, "crow-acp: sessions import: %s\n", termsafe.Line(err.Error()))
			continue
		}
		fmt.Fprintf(e.std.out, "imported %s (%d messages) from %s\n", id, n, termsafe.Line(name))
	}
	if failed > 0 {
		return fmt.Errorf("sessions import: %d of %d files not imported", failed, len(files))
	}
	return nil
}

func importFile(ctx context.Context, store persistence.Store, name string) (string, int, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	d, err := transcript.ReadJSON(f)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", name, err)
	}
	if err := store.ImportSession(ctx, d); errors.Is(err, persistence.ErrConflict) {
		return "", 0, fmt.Errorf("%s: session %s is already in the database: left as it is", name, d.Session.ID)
	} else if err != nil {
		return "", 0, fmt.Errorf("%s: %w", name, err)
	}
	return d.Session.ID, len(d.Messages), nil
}
