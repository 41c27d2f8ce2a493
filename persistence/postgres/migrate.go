package postgres

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crow-acp/crow-acp/migrations"
)

// lockMigrations takes a transaction-scoped advisory lock private to the
// current schema, so that processes starting together against one database
// apply each migration once, and tests in other schemas do not wait.
const lockMigrations = `SELECT pg_advisory_xact_lock(hashtext('crow-acp migrate ' || current_schema()))`

// migrate applies the migrations in dir of fsys that the database has not
// recorded in schema_migrations, each in its own transaction together with
// its record, so a failing file leaves no trace. A database recording a
// version newer than the newest file is refused: this binary does not know
// its schema.
func migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, dir string) error {
	files, err := migrations.Load(fsys, dir)
	if err != nil {
		return err
	}
	known := 0
	if len(files) > 0 {
		known = files[len(files)-1].Version
	}

	var current int
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockMigrations); err != nil {
			return err
		}
		// Under the lock: CREATE TABLE IF NOT EXISTS is not safe against a
		// concurrent CREATE of the same table.
		if _, err := tx.Exec(ctx, `
			CREATE TABLE IF NOT EXISTS schema_migrations (
				version    integer     NOT NULL PRIMARY KEY,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		return tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current)
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current > known {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary supports (%d); upgrade crow-acp", current, known)
	}
	// Every missing version is applied, not only those above the current
	// one: version numbers are reserved per feature and may land in any
	// order. apply skips the recorded ones.
	for _, f := range files {
		if err := apply(ctx, pool, f); err != nil {
			return fmt.Errorf("migrate: %s: %w", f.Name, err)
		}
	}
	return nil
}

// apply runs one migration file and records it, in one transaction. If
// another process applied it meanwhile, it does nothing.
func apply(ctx context.Context, pool *pgxpool.Pool, f migrations.File) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockMigrations); err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, f.Version).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil
		}
		// No arguments: pgx sends the file with the simple protocol, which
		// runs several statements.
		if _, err := tx.Exec(ctx, f.SQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, f.Version)
		return err
	})
}
