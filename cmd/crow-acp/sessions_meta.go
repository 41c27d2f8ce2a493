package main

import (
	"context"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
	"github.com/crow-acp/crow-acp/internal/agent"
)

// sessions rename and archive/unarchive: the same marks as the ACP methods
// session/set_title and session/archive, for sessions an editor cannot
// rename or archive itself.

const renameUsage = "Usage: crow-acp sessions rename ID TITLE\n\nSets a session's title, as editors show it in their session lists. No title\ncrow-acp generates replaces it afterwards.\n"

func sessionsRename(ctx context.Context, e *env, args []string) error {
	pos, cfg, err := sessionFlags("rename", renameUsage, args, e, nil)
	if err != nil {
		return err
	}
	switch {
	case len(pos) < 2:
		return config.Usagef("sessions rename: want a session ID and the new title (crow-acp sessions list shows the IDs)")
	case len(pos) > 2:
		return config.Usagef("sessions rename: unexpected argument %q (quote a title with spaces)", pos[2])
	}
	if agent.NormalizeTitle(pos[1]) == "" {
		return config.Usagef("sessions rename: the title is empty")
	}
	return sessions.Rename(ctx, cfg, e.io(), pos[0], pos[1])
}

// sessionsArchive is `sessions archive` (archived) or `unarchive`.
func sessionsArchive(archived bool) func(ctx context.Context, e *env, args []string) error {
	name, usage := "archive", "Usage: crow-acp sessions archive ID\n\nHides a session from session lists (crow-acp's and editors'); it keeps\neverything and can still be loaded. sessions unarchive lists it again.\n"
	if !archived {
		name, usage = "unarchive", "Usage: crow-acp sessions unarchive ID\n\nLists an archived session again.\n"
	}
	return onOne(name, usage, func(ctx context.Context, cfg *config.Settings, w sessions.IO, id string) error {
		return sessions.Archive(ctx, cfg, w, id, archived)
	})
}
