package postgres

import (
	"context"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
)

// migrate applies the migrations in dir of fsys that the database has not
// recorded (sqlcore.Migrate), each under a transaction-scoped advisory lock
// private to the current schema, so that processes starting together
// against one database apply each migration once.
func migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, dir string) error {
	return sqlcore.Migrate(ctx, &dialect, begin(pool), fsys, dir)
}
