// Package sqlite implements persistence.Store on SQLite (mattn/go-sqlite3).
//
// Two connection pools share one database file: a write pool of exactly one
// connection, where every transaction is BEGIN IMMEDIATE, so writers from this
// process queue in Go (honouring their contexts) instead of spinning on
// SQLITE_BUSY; and a read pool of query-only connections that, thanks to WAL,
// never block on the writer. Writers in other processes are handled by the
// busy timeout.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/crow-acp/crow-acp/internal/migrations"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
)

var (
	_ persistence.Recorder        = (*Store)(nil)
	_ persistence.WindowCache     = (*Store)(nil)
	_ persistence.CheckpointStore = (*Store)(nil)
)

// pragmas are set through the DSN so that every pooled connection gets them,
// not just the one a db.Exec happens to run on.
//
// Durability: in WAL mode, synchronous=NORMAL does not fsync on every commit,
// only at checkpoints. A committed transaction is in the WAL file before
// Commit returns, so it survives a crash of this process (kill -9, panic,
// os.Exit); only an OS crash or power loss can roll back the last few
// commits. The database never becomes corrupt either way.
const pragmas = "_journal_mode=WAL" +
	"&_busy_timeout=10000" + // ms; writers in other processes
	"&_foreign_keys=on" + // ON DELETE CASCADE
	"&_txlock=immediate" + // take the write lock at BEGIN: no deadlocking upgrades
	"&_synchronous=NORMAL" +
	// Keep prepared statements per connection, keyed by SQL text: without
	// it every Exec/Query prepares its statement anew and finalizes it
	// after (a third of a small write's CPU). This package runs about 50
	// distinct texts, so none is evicted.
	"&_stmt_cache_size=64"

// Store is a persistence.Store backed by one SQLite database file.
type Store struct{ *sqlcore.Store }

// Open opens (creating if needed) the database at path, a filesystem path,
// and applies pending migrations. The parent directory is created with mode
// 0700 and a new database file with mode 0600. A database whose schema is
// newer than this binary is refused.
func Open(ctx context.Context, path string) (*Store, error) {
	p, err := open(ctx, path, pragmas)
	if err != nil {
		return nil, err
	}
	return &Store{sqlcore.Opened(dialect, p.database())}, nil
}

// OpenBackground returns the store of the database at path at once and
// opens it as Open does in the background (serve answers initialize
// meanwhile). An open that failed is every waiting call's error, as failed
// words it, and the next call opens again (sqlcore.Background).
func OpenBackground(path string, failed func(error) error) *Store {
	return &Store{sqlcore.Background(dialect, func(ctx context.Context) (*sqlcore.DB, error) {
		p, err := open(ctx, path, pragmas)
		if err != nil {
			return nil, failed(err)
		}
		return p.database(), nil
	})}
}

// pools are an open database's two connection pools.
type pools struct {
	db  *sql.DB // writes: one connection, BEGIN IMMEDIATE
	rdb *sql.DB // reads: query-only pool
}

func (p *pools) database() *sqlcore.DB {
	return &sqlcore.DB{
		Begin: sqlcore.BeginSQL(p.db),
		Read:  sqlcore.SQLDB{DB: p.rdb},
		// Both connection pools; safe to call more than once.
		Close: func() error { return errors.Join(p.rdb.Close(), p.db.Close()) },
	}
}

// open opens the database at path with the given DSN parameters
// (benchmarks compare synchronous settings).
func open(ctx context.Context, path, pragmas string) (*pools, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	if err := createFile(abs); err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}

	// A file: URI with the path escaped, so that '?', '#' and '%' in a path
	// are not read as URI syntax.
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + pragmas

	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	// Migrate before the read pool exists: the first connection sets WAL
	// mode, which a query-only connection could not do.
	if err := migrate(ctx, db, migrations.SQLite, "sqlite"); err != nil {
		db.Close()
		if ro := readOnly(abs); ro != nil {
			// SQLite's own message ("unable to open database file") hides
			// the cause: WAL needs to write the file and its directory.
			return nil, fmt.Errorf("sqlite: open: %s is read-only (%v); crow-acp writes its database as it goes: fix the permissions or set CROW_DB elsewhere: %w",
				abs, ro, persistence.ErrStorageReadOnly)
		}
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	// SQLite silently keeps another journal mode where WAL is impossible
	// (some network filesystems); the durability and reader concurrency
	// above depend on WAL, so refuse.
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	if mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("sqlite: open: journal mode is %q, not wal: WAL unsupported here?", mode)
	}

	// Read connections do not map the file (mmap_size stays 0): a mapped
	// file cut while it is read (`cp backup.db crow.db` under a running
	// editor truncates it first) raises SIGBUS in SQLite's C code, which
	// nothing recovers from, and the process dies. Read with pread, the
	// same race is an error the request answers with.
	rdb, err := sql.Open("sqlite3", dsn+"&_query_only=on")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	if err := rdb.PingContext(ctx); err != nil {
		rdb.Close()
		db.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	return &pools{db: db, rdb: rdb}, nil
}

// migrate applies the migrations in dir of fsys that db has not recorded,
// each in its own immediate transaction (sqlcore.Migrate), so a concurrent
// Open of the same file cannot apply one twice.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS, dir string) error {
	return sqlcore.Migrate(ctx, &dialect, sqlcore.BeginSQL(db), fsys, dir)
}

// readOnly reports why the database file or its directory cannot be
// written, or nil.
func readOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	f.Close()
	// WAL creates the -wal and -shm files beside it.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".crow-write-check-*")
	if err != nil {
		return err
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

// createFile makes the parent directory (0700) and an empty database file
// (0600) if they do not exist, so SQLite never creates them with the umask's
// wider defaults. Existing files keep their mode. SQLite gives the -wal and
// -shm files the database file's mode.
func createFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// dialect is SQLite's: times are unix nanoseconds, id lists JSON arrays
// (read with json_each), text is kept as it is, and there are no row locks:
// every write transaction is BEGIN IMMEDIATE on the one write connection.
var dialect = sqlcore.Dialect{
	Name: "sqlite",
	Fragments: sqlcore.Fragments{
		Later:    `MAX(updated_at + 1, ?)`,
		Active:   `is_active = 1`,
		InIDs:    `id IN (SELECT value FROM json_each(?))`,
		Greatest: `MAX`,
		MigrateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    INTEGER NOT NULL PRIMARY KEY,
				applied_at TEXT    NOT NULL
			) STRICT`,
		MigrateLock: `SELECT 1`, // BEGIN IMMEDIATE already excludes other writers
		AppliedAt:   `?`,
		HasColumn:   `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`,
	},
	Stored: func(t time.Time) time.Time { return t },
	Time: func(t time.Time) (any, error) {
		if err := checkTime(t); err != nil {
			return nil, err
		}
		return t.UnixNano(), nil
	},
	CheckTime:     checkTime,
	ScanTime:      func(t *time.Time) any { return (*nanoTime)(t) },
	CursorKey:     func(t time.Time) int64 { return t.UnixNano() },
	FromCursorKey: func(k int64) time.Time { return time.Unix(0, k).UTC() },
	Text:          func(s string) string { return s },
	IDs: func(ids []int64) any {
		b, _ := json.Marshal(ids)
		return string(b)
	},
	IDArray:        sqlcore.JSONSlice[int64],
	ScanIDs:        func(ids *[]int64) any { return (*jsonIDs)(ids) },
	IsNoRows:       sqlcore.ErrNoRowsIs(sql.ErrNoRows),
	Classify:       classify,
	InsertMessages: insertMessages,
	InsertEvents:   insertEvents,
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// checkTime refuses a time that unix nanoseconds cannot hold.
func checkTime(t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("time %s out of range (years 1678 to 2262)", t)
	}
	return nil
}

// nanoTime scans a time stored as unix nanoseconds.
type nanoTime time.Time

func (t *nanoTime) Scan(src any) error {
	n, ok := src.(int64)
	if !ok {
		return fmt.Errorf("time column holds %T, not an integer", src)
	}
	*t = nanoTime(time.Unix(0, n).UTC())
	return nil
}

// jsonIDs scans an id list stored as a JSON array (NULL: nil).
type jsonIDs []int64

func (ids *jsonIDs) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("id list column holds %T", src)
	}
	v, err := sqlcore.DecodeJSONSlice[int64]("ids", b)
	*ids = v
	return err
}

// classify wraps the storage faults a user must hear about in the domain's
// sentinels, keeping the driver's error in the chain.
func classify(err error) error {
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrFull:
		return fmt.Errorf("%w: %w", persistence.ErrStorageFull, err)
	case sqlite3.ErrReadonly:
		return fmt.Errorf("%w: %w", persistence.ErrStorageReadOnly, err)
	}
	return err
}

const insertMessage = `
	INSERT INTO messages (session_id, seq, role, content, parts, reasoning,
		tool_call_id, tool_calls, status, meta, is_active, token_count, token_encoding, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertMessages inserts rows one statement each: the statement stays
// prepared in the connection's cache, and SQLite has no round trip to save.
func insertMessages(ctx context.Context, c sqlcore.Conn, sessionID string, rows []sqlcore.MessageRow) ([]int64, error) {
	tx := sqlcore.TxOf(c)
	ids := make([]int64, len(rows))
	for i := range rows {
		r := &rows[i]
		m := r.M
		res, err := tx.ExecContext(ctx, insertMessage, sessionID, r.Seq, string(m.Role), r.Content, r.Parts,
			r.Reasoning, r.ToolCallID, r.ToolCalls, string(m.Status), r.Meta, r.Active, m.TokenCount, m.TokenEncoding, r.Created)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if ids[i], err = res.LastInsertId(); err != nil {
			return nil, err
		}
	}
	return ids, nil
}
