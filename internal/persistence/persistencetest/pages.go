package persistencetest

import (
	"context"
	"database/sql"

	_ "github.com/mattn/go-sqlite3" // the file's pages, read directly
)

// SQLitePagesInUse is the bytes a SQLite database's data takes: its pages
// in use (not on the free list) once its WAL is checkpointed into the
// file. It is how crow-bench measures what a load adds.
func SQLitePagesInUse(ctx context.Context, path string) (int64, error) {
	d, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	if _, err := d.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, err
	}
	var pages, free, size int64
	for q, v := range map[string]*int64{`PRAGMA page_count`: &pages, `PRAGMA freelist_count`: &free, `PRAGMA page_size`: &size} {
		if err := d.QueryRowContext(ctx, q).Scan(v); err != nil {
			return 0, err
		}
	}
	return (pages - free) * size, nil
}
