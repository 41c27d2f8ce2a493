package sessions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Import stores JSON exports in the database, each in one transaction.
func Import(ctx context.Context, cfg *config.Settings, w IO, files []string) error {
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
			fmt.Fprintf(w.Err, "crow-acp: sessions import: %s\n", termsafe.Line(err.Error()))
			continue
		}
		// The directory is where exec and chat --session work when no
		// --cwd is given: said here, where the file chose it.
		fmt.Fprintf(w.Out, "imported %s (%d messages, directory %s) from %s\n", termsafe.Line(d.Session.ID), len(d.Messages),
			termsafe.Line(cmp.Or(d.Session.Cwd, "none")), termsafe.Line(name))
	}
	if failed > 0 {
		return fmt.Errorf("sessions import: %d of %d files not imported", failed, len(files))
	}
	return nil
}

// importFile stores the session of one file as agent.AsImported makes it,
// a new session started in defaultMode would be.
func importFile(ctx context.Context, store persistence.Importer, name, defaultMode string) (*persistence.SessionDump, error) {
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
