// Package postgres implements persistence.Store on PostgreSQL (jackc/pgx/v5),
// for teams whose sessions must be reachable from more than one machine.
//
// The semantics are those of the SQLite store, checked by the same
// conformance suite: a per-session seq counter bumped under the session row's
// lock (so concurrent appenders from any number of processes get gap-free,
// ordered seqs), UpdatedAt strictly increasing, every write one transaction.
// PostgreSQL keeps times to the microsecond: the store truncates every time
// it writes and hands the truncated value back, so what a caller holds after
// a write equals what a later read returns.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crow-acp/crow-acp/internal/migrations"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
)

var (
	_ persistence.Recorder        = (*Store)(nil)
	_ persistence.WindowCache     = (*Store)(nil)
	_ persistence.CheckpointStore = (*Store)(nil)
)

// Store is a persistence.Store backed by a PostgreSQL database.
type Store struct{ *sqlcore.Store }

// Open connects to the database at dsn, a postgres:// URL (libpq parameters
// such as sslmode, and search_path to use a schema, go in its query), checks
// that the server answers, and applies pending migrations. A database whose
// schema is newer than this binary is refused. Errors name the server but
// never the password.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &Store{sqlcore.Opened(dialect, database(pool))}, nil
}

// OpenBackground returns the store of the database at dsn at once and
// connects to it as Open does in the background (serve answers initialize
// meanwhile). An open that failed is every waiting call's error, as failed
// words it, and the next call opens again (sqlcore.Background).
func OpenBackground(dsn string, failed func(error) error) *Store {
	return &Store{sqlcore.Background(dialect, func(ctx context.Context) (*sqlcore.DB, error) {
		pool, err := open(ctx, dsn)
		if err != nil {
			return nil, failed(err)
		}
		return database(pool), nil
	})}
}

// open connects, checks and migrates; its errors name the server but
// never the password.
func open(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	pool, err := connect(ctx, dsn)
	if err != nil {
		return nil, errors.New(scrub(fmt.Sprintf("postgres: open %s: %v", Redact(dsn), err), dsn))
	}
	return pool, nil
}

func connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	if !IsDSN(dsn) {
		return nil, errors.New("not a postgres:// or postgresql:// URL or a libpq keyword/value string")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %s", parseReason(err))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// An unreachable server is a start-up error, not a hang.
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cannot connect: %w", err)
	}
	// The tables go into the first schema of search_path that exists; with
	// none (a misspelt search_path=...) PostgreSQL's own error is cryptic.
	var schema *string
	var path, db string
	if err := pool.QueryRow(ctx, `SELECT current_schema(), current_setting('search_path'), current_database()`).
		Scan(&schema, &path, &db); err != nil {
		pool.Close()
		return nil, err
	}
	if schema == nil {
		pool.Close()
		return nil, fmt.Errorf("no schema to keep the sessions in: database %q has none of search_path %q (create it with CREATE SCHEMA, or fix search_path in the URL)", db, path)
	}
	if err := migrate(ctx, pool, migrations.Postgres, "postgres"); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// database is pool as the store uses it.
func database(pool *pgxpool.Pool) *sqlcore.DB {
	return &sqlcore.DB{
		Begin: begin(pool),
		Read:  pgConn{pool},
		Close: func() error {
			pool.Close() // safe to call more than once
			return nil
		},
	}
}

// migrate applies the migrations in dir of fsys that the database has not
// recorded (sqlcore.Migrate), each under a transaction-scoped advisory lock
// private to the current schema, so that processes starting together
// against one database apply each migration once.
func migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, dir string) error {
	return sqlcore.Migrate(ctx, &dialect, begin(pool), fsys, dir)
}

// parseReason is the reason of a pgx parse error without the connection
// string it quotes: pgx masks passwords there only on a best-effort basis.
func parseReason(err error) string {
	msg := err.Error()
	if _, reason, ok := strings.Cut(msg, "`: "); ok {
		return reason
	}
	return msg
}

// dialect is PostgreSQL's: times are timestamptz (microseconds), id lists
// bigint[] (matched with = ANY), text that PostgreSQL cannot keep (NUL,
// bytes that are not UTF-8) is replaced as persistence.ValidText does, and
// writers of one session queue on its row lock. Transactions are read
// committed.
var dialect = sqlcore.Dialect{
	Name: "postgres",
	Fragments: sqlcore.Fragments{
		Later:     `GREATEST(updated_at + interval '1 microsecond', ?)`,
		Active:    `is_active`,
		InIDs:     `id = ANY(?)`,
		Greatest:  `GREATEST`,
		ForUpdate: ` FOR UPDATE`,
		ForNoKey:  ` FOR NO KEY UPDATE`,
		MigrateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    integer     NOT NULL PRIMARY KEY,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`,
		// Private to the current schema, so that tests in other
		// schemas do not wait.
		MigrateLock: `SELECT pg_advisory_xact_lock(hashtext('crow-acp migrate ' || current_schema()))`,
		AppliedAt:   `CAST(? AS timestamptz)`,
		HasColumn: `SELECT COUNT(*) FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`,
	},
	Numbered:       true,
	RowLocks:       true,
	Stored:         stored,
	Time:           func(t time.Time) (any, error) { return stored(t), nil },
	ScanTime:       func(t *time.Time) any { return t },
	CursorKey:      func(t time.Time) int64 { return t.UnixMicro() },
	FromCursorKey:  func(k int64) time.Time { return time.UnixMicro(k).UTC() },
	Text:           persistence.ValidText,
	IDs:            func(ids []int64) any { return ids },
	IDArray:        func(_ string, ids []int64) (any, error) { return ids, nil },
	ScanIDs:        func(ids *[]int64) any { return ids },
	IsNoRows:       sqlcore.ErrNoRowsIs(pgx.ErrNoRows),
	Classify:       classify,
	InsertMessages: insertMessages,
	InsertEvents:   insertEvents,
	SetTokenCounts: setTokenCounts,
}

// stored is t as PostgreSQL will keep it: UTC, to the microsecond.
func stored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// classify wraps the storage faults a user must hear about in the domain's
// sentinels, keeping the driver's error in the chain.
func classify(err error) error {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "53100": // disk_full
		return fmt.Errorf("%w: %w", persistence.ErrStorageFull, err)
	case "25006": // read_only_sql_transaction (a hot standby, default_transaction_read_only)
		return fmt.Errorf("%w: %w", persistence.ErrStorageReadOnly, err)
	}
	return err
}

// pgConn adapts a pool or a transaction to sqlcore.Conn; its methods only
// pass the call on, converting the results to the shape sqlcore reads.
type pgConn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (c pgConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (c pgConn) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	return c.q.Query(ctx, query, args...)
}

func (c pgConn) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	return c.q.QueryRow(ctx, query, args...)
}

// txOf is the transaction of a Conn that begin passed in.
func txOf(c sqlcore.Conn) pgx.Tx { return c.(pgConn).q.(pgx.Tx) }

// begin runs fn in one read-committed transaction of pool.
func begin(pool *pgxpool.Pool) func(ctx context.Context, fn func(tx sqlcore.Conn) error) error {
	return func(ctx context.Context, fn func(tx sqlcore.Conn) error) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return fn(pgConn{tx}) })
	}
}

const insertMessage = `
	INSERT INTO messages (session_id, seq, role, content, parts, reasoning,
		tool_call_id, tool_calls, status, meta, is_active, token_count, token_encoding, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
	RETURNING id`

// insertMessages inserts rows in batches, one round trip per batch.
func insertMessages(ctx context.Context, c sqlcore.Conn, sessionID string, rows []sqlcore.MessageRow) ([]int64, error) {
	const batchSize = 1000
	tx := txOf(c)
	ids := make([]int64, len(rows))
	for start := 0; start < len(rows); start += batchSize {
		end := min(start+batchSize, len(rows))
		b := &pgx.Batch{}
		for i := start; i < end; i++ {
			r := &rows[i]
			m := r.M
			b.Queue(insertMessage, sessionID, r.Seq, string(m.Role), r.Content, r.Parts,
				r.Reasoning, r.ToolCallID, r.ToolCalls, string(m.Status), r.Meta, r.Active, m.TokenCount, m.TokenEncoding, r.Created)
		}
		res := tx.SendBatch(ctx, b)
		for i := start; i < end; i++ {
			if err := res.QueryRow().Scan(&ids[i]); err != nil {
				res.Close()
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
		}
		if err := res.Close(); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

const insertEvent = `INSERT INTO events (stream_id, seq, connection_stream_id, at, direction, turn, kind, method, body)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`

// insertEvents inserts evs in one batch, one round trip.
func insertEvents(ctx context.Context, c sqlcore.Conn, evs []*persistence.Event, out []sqlcore.EventRow) error {
	tx := txOf(c)
	b := &pgx.Batch{}
	for i, e := range evs {
		body := e.Body
		if body == nil {
			body = []byte{}
		}
		b.Queue(insertEvent, out[i].StreamID, out[i].Seq, out[i].ConnectionStreamID, out[i].At, string(e.Direction), e.Turn, string(e.Kind), e.Method, body)
	}
	res := tx.SendBatch(ctx, b)
	for i := range evs {
		if err := res.QueryRow().Scan(&out[i].ID); err != nil {
			res.Close()
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return res.Close()
}

// setTokenCounts updates every count in one statement.
func setTokenCounts(ctx context.Context, c sqlcore.Conn, sessionID, encoding string, ids, counts []int64) error {
	_, err := txOf(c).Exec(ctx, `
		UPDATE messages SET token_count = u.n, token_encoding = $1
		FROM unnest($2::bigint[], $3::bigint[]) AS u(id, n)
		WHERE messages.session_id = $4 AND messages.id = u.id`, encoding, ids, counts, sessionID)
	return err
}
