package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/agent"
	"github.com/crow-acp/crow-acp/internal/termsafe"
	"github.com/crow-acp/crow-acp/persistence"
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
		return usagef("sessions rename: want a session ID and the new title (crow-acp sessions list shows the IDs)")
	case len(pos) > 2:
		return usagef("sessions rename: unexpected argument %q (quote a title with spaces)", pos[2])
	}
	id := pos[0]
	if agent.NormalizeTitle(pos[1]) == "" {
		return usagef("sessions rename: the title is empty")
	}
	store, ok, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	if !ok {
		return &notFoundError{id: id}
	}
	defer store.Close()
	title, err := agent.RetitleStored(ctx, store, id, pos[1])
	if err != nil {
		return markError("rename", id, err)
	}
	fmt.Fprintf(e.std.out, "renamed %s to %s\n", termsafe.Line(id), termsafe.Line(title))
	return nil
}

// sessionsArchive is `sessions archive` (archived) or `unarchive`.
func sessionsArchive(archived bool) func(ctx context.Context, e *env, args []string) error {
	name, done, usage := "archive", "archived", "Usage: crow-acp sessions archive ID\n\nHides a session from session lists (crow-acp's and editors'); it keeps\neverything and can still be loaded. sessions unarchive lists it again.\n"
	if !archived {
		name, done, usage = "unarchive", "unarchived", "Usage: crow-acp sessions unarchive ID\n\nLists an archived session again.\n"
	}
	return func(ctx context.Context, e *env, args []string) error {
		store, id, err := oneSession(ctx, name, usage, args, e, nil)
		if err != nil {
			return err
		}
		defer store.Close()
		if err := agent.ArchiveStored(ctx, store, id, archived); err != nil {
			return markError(name, id, err)
		}
		fmt.Fprintf(e.std.out, "%s %s\n", done, termsafe.Line(id))
		return nil
	}
}

// markError is a rename or archive failure: an unknown id exits 3 like
// every sessions command's.
func markError(op, id string, err error) error {
	if errors.Is(err, persistence.ErrNotFound) {
		return &notFoundError{id: id}
	}
	return fmt.Errorf("sessions %s %s: %w", op, id, err)
}
