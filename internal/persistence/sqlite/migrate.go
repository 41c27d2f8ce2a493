package sqlite

import (
	"context"
	"database/sql"
	"io/fs"

	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
)

// migrate applies the migrations in dir of fsys that db has not recorded,
// each in its own immediate transaction (sqlcore.Migrate), so a concurrent
// Open of the same file cannot apply one twice.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS, dir string) error {
	return sqlcore.Migrate(ctx, &dialect, sqlcore.BeginSQL(db), fsys, dir)
}
