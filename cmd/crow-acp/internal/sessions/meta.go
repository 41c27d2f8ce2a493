package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Rename sets a session's title, as session/set_title does, for sessions
// an editor cannot rename itself.
func Rename(ctx context.Context, cfg *config.Settings, w IO, id, title string) error {
	store, err := openFor(ctx, cfg, id)
	if err != nil {
		return err
	}
	defer store.Close()
	title, err = agent.RetitleStored(ctx, store, id, title)
	if err != nil {
		return markError("rename", id, err)
	}
	fmt.Fprintf(w.Out, "renamed %s to %s\n", termsafe.Line(id), termsafe.Line(title))
	return nil
}

// Archive marks a session archived (or not), as session/archive does.
func Archive(ctx context.Context, cfg *config.Settings, w IO, id string, archived bool) error {
	name, done := "archive", "archived"
	if !archived {
		name, done = "unarchive", "unarchived"
	}
	store, err := openFor(ctx, cfg, id)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := agent.ArchiveStored(ctx, store, id, archived); err != nil {
		return markError(name, id, err)
	}
	fmt.Fprintf(w.Out, "%s %s\n", done, termsafe.Line(id))
	return nil
}

// markError is a rename or archive failure: an unknown id exits 3 like
// every sessions command's.
func markError(op, id string, err error) error {
	if errors.Is(err, persistence.ErrNotFound) {
		return &NotFoundError{ID: id}
	}
	return fmt.Errorf("sessions %s %s: %w", op, id, err)
}
