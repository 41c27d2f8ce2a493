package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/crow-acp/crow-acp/internal/migrations"
)

// Migrate applies the migrations in dir of fsys that the database has not
// recorded in schema_migrations, each in its own transaction (begin: the
// backend's, with its placeholders already rewritten by the returned
// queries) together with its record, so a failing file leaves no trace.
// Every transaction first takes {migrate_lock}, so processes starting
// together apply each migration once. A database recording a version newer
// than the newest file is refused: this binary does not know its schema.
func Migrate(ctx context.Context, d *Dialect, begin func(ctx context.Context, fn func(tx Conn) error) error, fsys fs.FS, dir string) error {
	files, err := migrations.Load(fsys, dir)
	if err != nil {
		return err
	}
	known := 0
	if len(files) > 0 {
		known = files[len(files)-1].Version
	}
	s := &Store{shared: &shared{d: *d}} // its statements run in begin's transactions only
	run := func(fn func(tx conn) error) error {
		return begin(ctx, func(tx Conn) error {
			c := conn{s, tx}
			if _, err := c.Exec(ctx, `{migrate_lock}`); err != nil {
				return err
			}
			return fn(c)
		})
	}

	var current int
	err = run(func(tx conn) error {
		// Under the lock: CREATE TABLE IF NOT EXISTS is not safe against a
		// concurrent CREATE of the same table.
		if _, err := tx.Exec(ctx, `{migrate_table}`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		return tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current)
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current >= unreleasedFrom {
		var unreleased bool
		if err := run(func(tx conn) error {
			unreleased, err = unreleasedFormat(ctx, tx)
			return err
		}); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if unreleased {
			return ErrUnreleasedFormat
		}
	}
	if current > known {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary supports (%d); upgrade crow-acp", current, known)
	}
	// Every missing version is applied, not only those above the current
	// one: version numbers are reserved per feature and may land in any
	// order. Recorded ones are skipped.
	for _, f := range files {
		err := run(func(tx conn) error {
			var done int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, f.Version).Scan(&done); err != nil {
				return err
			}
			if done > 0 {
				return nil
			}
			// No arguments: the file may hold several statements.
			if _, err := tx.c.Exec(ctx, f.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, {applied_at})`,
				f.Version, time.Now().UTC().Format(time.RFC3339Nano))
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate: %s: %w", f.Name, err)
		}
	}
	return nil
}

// unreleasedFrom is the first version development builds between 0.1.0
// and 0.2.0 recorded (8 to 10) for storage formats that were never
// released and that this version does not read.
const unreleasedFrom = 8

// ErrUnreleasedFormat refuses a database a development build wrote in a
// storage format that was never released.
var ErrUnreleasedFormat = errors.New("migrate: this database was written by an unreleased development build of " +
	"crow-acp (schema versions 8-10, a storage format no release reads). To convert it: with the build that wrote it, " +
	"export each session (crow-acp sessions export <id> --format json --output <id>.json); move the database aside " +
	"(crow-acp creates a new one in its place); then import the files with this version (crow-acp sessions import " +
	"<id>.json ...). A database of crow-acp 0.1.0 is upgraded in place")

// unreleasedFormat reports whether the database holds what only those
// builds made: a content_at column on messages (their 0009), or version 8
// recorded over events still named by stream text (their 0008, which
// changed no table).
func unreleasedFormat(ctx context.Context, tx conn) (bool, error) {
	has := func(table, column string) (bool, error) {
		var n int
		err := tx.QueryRow(ctx, `{has_column}`, table, column).Scan(&n)
		return n > 0, err
	}
	if ok, err := has("messages", "content_at"); ok || err != nil {
		return ok, err
	}
	var v8 int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = 8`).Scan(&v8); err != nil || v8 == 0 {
		return false, err
	}
	return has("events", "stream")
}
