package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"time"

	"github.com/crow-acp/crow-acp/migrations"
)

// migrate applies the migrations in dir of fsys that db has not recorded in
// schema_migrations, each in its own immediate transaction together with its
// record, so a failing file leaves no trace and a concurrent Open of the same
// file cannot apply one twice. A database recording a version newer than the
// newest file is refused: this binary does not know its schema.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS, dir string) error {
	files, err := migrations.Load(fsys, dir)
	if err != nil {
		return err
	}
	known := 0
	if len(files) > 0 {
		known = files[len(files)-1].Version
	}

	if _, err := db.ExecContext(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER NOT NULL PRIMARY KEY,
			applied_at TEXT    NOT NULL
		) STRICT`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}

	var current int
	if err := db.QueryRowContext(ctx,
		`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if current > known {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary supports (%d); upgrade crow-acp", current, known)
	}

	// Every missing version is applied, not only those above the current
	// one: version numbers are reserved per feature and may land in any
	// order. apply skips the recorded ones.
	for _, f := range files {
		if err := apply(ctx, db, f); err != nil {
			return fmt.Errorf("migrate: %s: %w", f.Name, err)
		}
	}
	return nil
}

// apply runs one migration file and records it, in one transaction. If
// another process applied it meanwhile, it does nothing.
func apply(ctx context.Context, db *sql.DB, f migrations.File) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()

	var done int
	if err := tx.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, f.Version).Scan(&done); err != nil {
		return err
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, f.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		f.Version, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	return tx.Commit()
}
