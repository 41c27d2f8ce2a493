package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/persistence/storecopy"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Migrate copies every session of the store from into the store to and
// proves the copy (storecopy.Copy), saying on Out what it did: each
// session's outcome when verbose, a conflict's always. A ~ in either is
// the home directory getenv names.
func Migrate(ctx context.Context, w IO, from, to string, verbose bool, getenv func(string) string) error {
	if err := checkMigrateStores(from, to, getenv); err != nil {
		return err
	}
	from, to = config.ExpandHome(from, getenv), config.ExpandHome(to, getenv)
	src, err := openMigrated(ctx, "source", from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openMigrated(ctx, "destination", to)
	if err != nil {
		return err
	}
	defer dst.Close()

	out := w.Out
	fmt.Fprintf(out, "copying sessions from %s to %s\n", backend.Describe(from), backend.Describe(to))
	report, err := storecopy.Copy(ctx, dst, src, func(id, outcome string) {
		if verbose || outcome == "conflict" {
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
		fmt.Fprintf(out, "permission rules: %d", report.Rules)
		if n := len(report.RuleConflicts); n > 0 {
			fmt.Fprintf(out, ", %d with the other decision in the destination (not copied): %s", n, strings.Join(report.RuleConflicts, ", "))
		}
		fmt.Fprintln(out)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func openMigrated(ctx context.Context, role, dsn string) (backend.Store, error) {
	s, err := backend.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("migrate: cannot open the %s %s: %w", role, backend.Describe(dsn), err)
	}
	return s, nil
}

// checkMigrateStores rejects what would surely be a mistake before opening
// anything: a missing store, the same store twice, a source file that does
// not exist (opening it would create an empty database).
func checkMigrateStores(from, to string, getenv func(string) string) error {
	if from == "" || to == "" {
		return config.Usagef("migrate: both --from and --to are required (see crow-acp migrate --help)")
	}
	for _, s := range []struct{ flag, dsn string }{{"--from", from}, {"--to", to}} {
		if _, err := backend.Parse(s.dsn); err != nil {
			return config.Usagef("migrate: %s: %v", s.flag, err)
		}
	}
	from, to = config.ExpandHome(from, getenv), config.ExpandHome(to, getenv)
	if from == to {
		return config.Usagef("migrate: --from and --to are the same store")
	}
	if kind, _ := backend.Parse(from); kind == backend.SQLite {
		if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
			return config.Usagef("migrate: --from %s: no such database file", from)
		}
	}
	return nil
}
