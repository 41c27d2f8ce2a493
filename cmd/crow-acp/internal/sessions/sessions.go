// Package sessions is what `crow-acp sessions` and `crow-acp migrate` do
// with the stored sessions: each function opens the session database,
// reads or changes what a subcommand names and says what it did. Package
// main parses their flags.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// IO is where a command writes: its result on Out, what it says about it
// on Err.
type IO struct{ Out, Err io.Writer }

// NotFoundError is a session id that does not exist.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no session %q (crow-acp sessions list shows the stored ones)", e.ID)
}

// OpenExisting opens the database for a command that only reads or
// changes what it holds: a database that does not exist yet is reported
// (ok false), not created.
func OpenExisting(ctx context.Context, cfg *config.Settings) (store backend.Store, ok bool, err error) {
	if cfg.LocalDB() {
		if _, err := os.Stat(cfg.DB.V); errors.Is(err, os.ErrNotExist) {
			return nil, false, nil
		}
	}
	store, err = cfg.OpenStore(ctx)
	if err != nil {
		return nil, false, err
	}
	return store, true, nil
}

// openFor opens the database for a command on session id: no database is
// no such session. The caller closes the store.
func openFor(ctx context.Context, cfg *config.Settings, id string) (backend.Store, error) {
	store, ok, err := OpenExisting(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &NotFoundError{ID: id}
	}
	return store, nil
}

// find is NotFoundError unless id is a session.
func find(ctx context.Context, store persistence.DumpSource, id string) error {
	_, err := store.GetSession(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return &NotFoundError{ID: id}
	}
	return err
}

// openFound opens the database for a command on session id, which must
// exist. The caller closes the store.
func openFound(ctx context.Context, cfg *config.Settings, id string) (backend.Store, error) {
	store, err := openFor(ctx, cfg, id)
	if err != nil {
		return nil, err
	}
	if err := find(ctx, store, id); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// openLoaded opens the database for a command on session id and reads the
// session with its whole history. The caller closes the store.
func openLoaded(ctx context.Context, cfg *config.Settings, id string) (backend.Store, *persistence.SessionDump, error) {
	store, err := openFor(ctx, cfg, id)
	if err != nil {
		return nil, nil, err
	}
	d, err := load(ctx, store, id)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, d, nil
}

// ListOptions are what `sessions list` shows.
type ListOptions struct {
	Cwd       string
	Limit     int  // 0: all
	JSON      bool // JSON lines
	WithEmpty bool // also the never-prompted sessions
	Archived  bool // also the archived ones
}

// List prints the stored sessions, newest first.
func List(ctx context.Context, cfg *config.Settings, w IO, o ListOptions) error {
	store, ok, err := OpenExisting(ctx, cfg)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintf(w.Err, "no sessions yet (%s does not exist)\n", backend.Describe(cfg.DB.V))
		return nil
	}
	defer store.Close()

	keep := agent.ArchiveFilter("")
	if o.Archived {
		keep = nil
	}
	all, err := Stored(ctx, store, o.Cwd, o.Limit, o.WithEmpty, keep)
	if err != nil {
		return err
	}
	if len(all) == 0 && !o.JSON {
		fmt.Fprintf(w.Err, "no sessions in %s\n", backend.Describe(cfg.DB.V))
		return nil
	}
	return transcript.WriteList(w.Out, all, o.JSON)
}

// Stored reads up to limit sessions (0: all), newest first, through the
// pages of the store; without withEmpty the never-prompted ones are left
// out.
func Stored(ctx context.Context, store agent.SessionStore, cwd string, limit int, withEmpty bool, keep func(*persistence.Session) bool) ([]persistence.Session, error) {
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

// load reads one session and its whole history.
func load(ctx context.Context, store persistence.DumpSource, id string) (*persistence.SessionDump, error) {
	d, err := persistence.Dump(ctx, store, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, &NotFoundError{ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	return d, nil
}

// Show prints a session's details and its whole conversation as text.
func Show(ctx context.Context, cfg *config.Settings, w IO, id string) error {
	store, d, err := openLoaded(ctx, cfg, id)
	if err != nil {
		return err
	}
	defer store.Close()
	transcript.WriteText(w.Out, d)
	return nil
}

// Export writes a session as Markdown or JSON to output ("": Out).
func Export(ctx context.Context, cfg *config.Settings, w IO, id, format, output string) error {
	store, err := openFor(ctx, cfg, id)
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
		return config.Usagef("sessions export: unknown format %q: use markdown or json", format)
	}
	d, err := load(ctx, store, id)
	if err != nil {
		return err
	}
	if format == "json" {
		if err := d.ReadBlobs(ctx, store); err != nil {
			return fmt.Errorf("export: read checkpoints: %w", err)
		}
	}
	if output == "" {
		return write(w.Out, d)
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
	fmt.Fprintf(w.Err, "exported %s (%d messages) to %s\n", termsafe.Line(id), len(d.Messages), output)
	return nil
}

// Delete removes a session and everything stored with it, its work-tree
// snapshots under trees too.
func Delete(ctx context.Context, cfg *config.Settings, w IO, id, trees string) error {
	store, d, err := openLoaded(ctx, cfg, id)
	if err != nil {
		return err
	}
	defer store.Close()
	id = d.Session.ID
	if err := store.DeleteSession(ctx, id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := checkpoint.RemoveTrees(trees, id); err != nil {
		fmt.Fprintf(w.Err, "the session's work-tree snapshots stay: %v\n", err)
	}
	fmt.Fprintf(w.Out, "deleted %s (%d messages)\n", termsafe.Line(id), len(d.Messages))
	return nil
}
