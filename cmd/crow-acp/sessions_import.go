package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/crow-acp/crow-acp/agent"
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

A file is anyone's: an imported session gets what a new session would.
It starts in the configured mode (permissions.mode) with the configured
model; the file's system prompt, instruction files, MCP servers, extra
directories, fork and subagent links and archive mark are dropped (an
editor names its servers and directories again when it opens the
session); its cost so far and whether the title was set by hand are kept.
A session id that is not a plain token, or a directory that is not an
absolute path, is refused. Files of up to 256 MiB are read.

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
		d, err := importFile(ctx, store, name, cfg.DefaultMode())
		if err != nil {
			failed++
			fmt.Fprintf(e.std.err, "crow-acp: sessions import: %s\n", termsafe.Line(err.Error()))
			continue
		}
		// The directory is where exec and chat --session work when no
		// --cwd is given: said here, where the file chose it.
		fmt.Fprintf(e.std.out, "imported %s (%d messages, directory %s) from %s\n", termsafe.Line(d.Session.ID), len(d.Messages),
			termsafe.Line(cmp.Or(d.Session.Cwd, "none")), termsafe.Line(name))
	}
	if failed > 0 {
		return fmt.Errorf("sessions import: %d of %d files not imported", failed, len(files))
	}
	return nil
}

// importFile stores the session of one file as agent.AsImported makes it,
// a new session started in defaultMode would be.
func importFile(ctx context.Context, store persistence.Store, name, defaultMode string) (*persistence.SessionDump, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Said before anything is read: what is read is held in memory.
	if st, err := f.Stat(); err == nil && st.Size() > transcript.MaxExportBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d MiB an import reads (crow-acp migrate copies sessions between databases without a file)",
			name, st.Size(), transcript.MaxExportBytes>>20)
	}
	d, err := transcript.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := agent.AsImported(&d.Session, defaultMode); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := store.ImportSession(ctx, d); errors.Is(err, persistence.ErrConflict) {
		return nil, fmt.Errorf("%s: session %s is already in the database: left as it is", name, d.Session.ID)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
