package main

import (
	"context"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
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
		return config.Usagef("sessions import: missing FILE (a session exported with crow-acp sessions export ID --format json)")
	}
	return sessions.Import(ctx, cfg, e.io(), files)
}
