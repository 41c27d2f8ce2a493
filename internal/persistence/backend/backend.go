// Package backend opens the persistence.Store that a database setting names:
// a postgres:// or postgresql:// URL selects PostgreSQL, anything else is the
// path of a SQLite file. Every command that opens a store (serving, migrate)
// goes through Open or OpenBackground, so they agree on what a setting means.
package backend

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// Kind is a storage backend.
type Kind string

const (
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
)

// Parse tells which backend dsn selects. An empty dsn, or a URL with a scheme
// other than postgres/postgresql (a likely typo, which would otherwise become
// an oddly named SQLite file), is an error.
func Parse(dsn string) (Kind, error) {
	switch {
	case dsn == "":
		return "", errors.New("no database: give a SQLite file path or a postgres:// URL")
	case postgres.IsDSN(dsn):
		return Postgres, nil
	}
	// Looks like libpq keywords but is not a valid string of them (an
	// unknown keyword, an unclosed quote): refused, never a file name.
	if looksLikeKeywordDSN(dsn) {
		return "", errors.New("the database looks like a PostgreSQL keyword/value string but cannot be read as one (check the keywords and quotes), and it is not a file path")
	}
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && !strings.ContainsAny(scheme, `/\`) {
		return "", fmt.Errorf("unsupported database URL scheme %q: use a postgres:// or postgresql:// URL, or a SQLite file path", scheme)
	}
	return SQLite, nil
}

// Describe returns dsn fit for messages and logs: a URL's password is
// masked, a path is kept.
func Describe(dsn string) string {
	if !postgres.IsDSN(dsn) && looksLikeKeywordDSN(dsn) {
		return keywordPassword.ReplaceAllString(dsn, "${1}xxxxx")
	}
	if postgres.IsDSN(dsn) {
		return postgres.Redact(dsn)
	}
	return dsn
}

// Store is the store of either backend: the one SQL store over SQLite's or
// PostgreSQL's dialect.
type Store interface {
	persistence.Recorder
	persistence.WindowCache
	persistence.CheckpointStore
	// Settle waits up to grace for an open still running (OpenBackground), then
	// gives up on it, and says why the store is not open (nil: it is, or
	// it was opened before it was returned); ErrAbandoned when it gave up.
	Settle(grace time.Duration) error
}

// ErrAbandoned is what a call waiting for OpenBackground's database gets once
// the store was closed, or Settle gave up, before it opened.
var ErrAbandoned = sqlcore.ErrAbandoned

// Open opens (and migrates) the store dsn names. Errors name the backend and
// the database (see Describe), never a password.
func Open(ctx context.Context, dsn string) (Store, error) {
	kind, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	var s Store
	if kind == Postgres {
		s, err = postgres.Open(ctx, dsn)
	} else {
		s, err = sqlite.Open(ctx, dsn)
	}
	if err != nil {
		return nil, err // not s: a nil *Store in a non-nil interface
	}
	return s, nil
}

// OpenBackground returns the store dsn names at once and opens (and
// migrates) it as Open does in the background: serve answers initialize
// without waiting for the database. Every call waiting for an open that
// failed gets the error failed makes of it, and the next call opens again
// (a locked or missing database can be fixed while the editor keeps the
// agent running). Only a dsn Parse refuses is an error here.
func OpenBackground(dsn string, failed func(error) error) (Store, error) {
	kind, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	if kind == Postgres {
		return postgres.OpenBackground(dsn, failed), nil
	}
	return sqlite.OpenBackground(dsn, failed), nil
}

// looksLikeKeywordDSN: "word=" at the start and a space-separated second
// "word=" or a password: not a file name anyone means.
func looksLikeKeywordDSN(dsn string) bool {
	s := strings.TrimSpace(dsn)
	first, rest, _ := strings.Cut(s, " ")
	return strings.Contains(first, "=") && !strings.ContainsAny(first[:strings.Index(first, "=")], "/\\.") &&
		(strings.Contains(rest, "=") || strings.Contains(strings.ToLower(s), "password"))
}

// keywordPassword finds password=value (quoted or not, possibly unclosed)
// in a keyword string that did not parse.
var keywordPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('[^']*'?|\S+)`)
