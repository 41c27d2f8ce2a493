// Package sqlcore is the one implementation of persistence.Store over SQL:
// the rules (paging, defaults and validation, seqs and UpdatedAt, compaction
// and its undo, projection events, fencing, import, migrations) are written
// here once, over a Dialect each backend (sqlite, postgres) provides. A
// dialect supplies what differs between the databases: how to run a
// transaction, how a time and an id list are stored, the few SQL fragments
// that differ, the batch inserts of the hot paths, and its error classes.
//
// Queries here are constant text with ? placeholders and {fragment} names
// (see Fragments); the store rewrites each text once for its dialect and
// caches it, so no value ever reaches SQL text.
package sqlcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Row is one result row (database/sql's *sql.Row, pgx.Row).
type Row interface{ Scan(dest ...any) error }

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Conn runs SQL text already in the dialect's form: a write transaction or
// the read pool.
type Conn interface {
	Exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// MessageRow is one message ready for an INSERT, encoded before the
// transaction so that encoding errors never hold a lock.
type MessageRow struct {
	M                      *persistence.Message
	CreatedAt              time.Time // as stored
	Created                any       // CreatedAt encoded by Dialect.Time
	Parts, ToolCalls, Meta any
	// The free text as the database keeps it (Dialect.Text).
	Content, Reasoning, ToolCallID string
	Seq                            int64
	Active                         bool
}

// EventRow is what an event insert assigns: Seq, At and the numbers of
// the event's stream and connection (event_streams ids; 0: none) are
// chosen before the insert, ID by it.
type EventRow struct {
	ID, Seq                      int64
	StreamID, ConnectionStreamID int64
	At                           time.Time
}

// Dialect is what a backend provides.
type Dialect struct {
	// Name prefixes every error ("sqlite: append messages: ...").
	Name string
	// Fragments fill the {name} slots of the queries (see Fragments).
	Fragments Fragments
	// Numbered: placeholders are $1, $2... instead of ?.
	Numbered bool
	// RowLocks: the database has row locks (SELECT ... FOR UPDATE) that
	// writers of one session must take; without them every write
	// transaction already excludes all others.
	RowLocks bool

	// Stored is t as the database keeps it (its precision, UTC or not).
	Stored func(t time.Time) time.Time
	// Time encodes a time parameter; an error when the database cannot
	// keep it (CheckTime, when set, says so without encoding). ScanTime is
	// a Scan destination that fills *t.
	Time      func(t time.Time) (any, error)
	CheckTime func(t time.Time) error
	ScanTime  func(t *time.Time) any
	// CursorKey and FromCursorKey convert an updated_at to and from the
	// integer a ListSessions cursor carries.
	CursorKey     func(t time.Time) int64
	FromCursorKey func(k int64) time.Time
	// Text is free text as the database can keep it.
	Text func(s string) string
	// IDs encodes the parameter of the {in_ids} fragment; IDArray a
	// compaction's id list column, ScanIDs its Scan destination.
	IDs      func(ids []int64) any
	IDArray  func(field string, ids []int64) (any, error)
	ScanIDs  func(ids *[]int64) any
	IsNoRows func(err error) bool
	// Classify wraps storage faults in persistence.ErrStorageFull and
	// ErrStorageReadOnly.
	Classify func(err error) error

	// InsertMessages inserts rows (each with its Seq and Active) inside tx
	// and returns their ids; an error names the failing row ("message 3: ...").
	InsertMessages func(ctx context.Context, tx Conn, sessionID string, rows []MessageRow) ([]int64, error)
	// InsertEvents inserts evs with the seqs and times in out inside tx and
	// fills out[i].ID.
	InsertEvents func(ctx context.Context, tx Conn, evs []*persistence.Event, out []EventRow) error
	// SetTokenCounts, when set, replaces the one-UPDATE-per-message loop.
	SetTokenCounts func(ctx context.Context, tx Conn, sessionID, encoding string, ids []int64, counts []int64) error
}

// Fragments are the SQL pieces that differ between databases, by slot.
type Fragments struct {
	Later        string // {later}: updated_at moved strictly forward, to at least the parameter
	Active       string // {active}: the message is active (a literal, for partial indexes)
	InIDs        string // {in_ids}: id is in the list parameter (Dialect.IDs)
	Greatest     string // {greatest}: the larger of two values
	ForUpdate    string // {for_update}: lock the selected row (with RowLocks)
	ForNoKey     string // {for_no_key_update}: lock the row against deletion and takeover
	MigrateTable string // {migrate_table}: CREATE TABLE IF NOT EXISTS schema_migrations
	MigrateLock  string // {migrate_lock}: a statement that serialises migrators
	AppliedAt    string // {applied_at}: the applied_at parameter (RFC 3339 text)
	HasColumn    string // {has_column}: how many columns the table (1st parameter) has of a name (2nd)
}

// Store implements persistence.Recorder over a Dialect.
type Store struct {
	*shared
	// origin is stamped on the projection events of every write (see
	// persistence.Origin); zero for the store New returns.
	origin persistence.Origin
	// fence, when set, fences every write (persistence.Fence).
	fence *persistence.Fence
}

// shared is what every view of one store (WithOrigin) shares.
type shared struct {
	d Dialect
	*opening
	texts sync.Map // constant query text -> dialect text
	// connectionStreams are the event_streams numbers of the connections
	// this store created (CreateConnection), known committed: events name
	// their connection by it, and looking it up costs every write a query.
	connectionStreams sync.Map // connection id -> int64
}

// Opened returns the store of d over db, an open database.
func Opened(d Dialect, db *DB) *Store {
	o := newOpening(nil)
	o.opened.Store(db)
	return &Store{shared: &shared{d: d, opening: o}}
}

// Background returns the store of d at once, its database opened by open
// in the background from now: a call waits for it, and the first call
// after it failed opens again (see opening).
func Background(d Dialect, open func(ctx context.Context) (*DB, error)) *Store {
	o := newOpening(open)
	o.mu.Lock()
	o.startLocked()
	o.mu.Unlock()
	return &Store{shared: &shared{d: d, opening: o}}
}

// WithOrigin returns the store with every write recorded as made by o.
func (s *Store) WithOrigin(o persistence.Origin) persistence.Store {
	return &Store{shared: s.shared, origin: o, fence: s.fence}
}

// WithFence returns the store with every write fenced by f.
func (s *Store) WithFence(f persistence.Fence) persistence.Store {
	return &Store{shared: s.shared, origin: s.origin, fence: &f}
}

// sql is q in the dialect's form: fragments filled, placeholders numbered.
// q is always a constant of this package.
func (s *Store) sql(q string) string {
	if v, ok := s.texts.Load(q); ok {
		return v.(string)
	}
	out := Rewrite(q, s.d.Fragments, s.d.Numbered)
	s.texts.Store(q, out)
	return out
}

// Rewrite fills q's {name} slots from f and, when numbered, turns its ?
// placeholders into $1, $2... in order.
func Rewrite(q string, f Fragments, numbered bool) string {
	r := strings.NewReplacer(
		"{later}", f.Later, "{active}", f.Active, "{in_ids}", f.InIDs, "{greatest}", f.Greatest,
		"{for_update}", f.ForUpdate, "{for_no_key_update}", f.ForNoKey,
		"{migrate_table}", f.MigrateTable, "{migrate_lock}", f.MigrateLock, "{applied_at}", f.AppliedAt, "{has_column}", f.HasColumn)
	q = r.Replace(q)
	if !numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// conn rewrites the constant queries of this package for a dialect's Conn:
// a transaction's, or (c nil) the read pool once the database is open.
type conn struct {
	s *Store
	c Conn
}

// on is the Conn a statement runs on.
func (c conn) on(ctx context.Context) (Conn, error) {
	if c.c != nil {
		return c.c, nil
	}
	db, err := c.s.db(ctx)
	if err != nil {
		return nil, err
	}
	return db.Read, nil
}

func (c conn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	on, err := c.on(ctx)
	if err != nil {
		return 0, err
	}
	return on.Exec(ctx, c.s.sql(q), args...)
}

func (c conn) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	on, err := c.on(ctx)
	if err != nil {
		return nil, err
	}
	return on.Query(ctx, c.s.sql(q), args...)
}

func (c conn) QueryRow(ctx context.Context, q string, args ...any) Row {
	on, err := c.on(ctx)
	if err != nil {
		return errRow{err}
	}
	return on.QueryRow(ctx, c.s.sql(q), args...)
}

// errRow is a row that could not be read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// read is the read pool.
func (s *Store) read() conn { return conn{s: s} }

// errorf prefixes err with the backend and the operation; nil stays nil.
// A database that did not open is reported as its open's error, whatever
// the operation (notOpen).
func (s *Store) errorf(op string, err error) error {
	if err == nil {
		return nil
	}
	if no := (*notOpen)(nil); errors.As(err, &no) {
		return no
	}
	return fmt.Errorf("%s: %s: %w", s.d.Name, op, err)
}

// write runs fn in one write transaction, fenced by the store's fence, if
// any.
func (s *Store) write(ctx context.Context, fn func(tx conn) error) error {
	f := s.fence
	if f == nil {
		return s.transact(ctx, fn)
	}
	return s.transact(ctx, func(tx conn) error {
		if err := s.checkFence(ctx, tx, *f); err != nil {
			return err
		}
		return fn(tx)
	})
}

// transact runs fn in one write transaction, unfenced.
func (s *Store) transact(ctx context.Context, fn func(tx conn) error) error {
	db, err := s.db(ctx)
	if err != nil {
		return err
	}
	return s.d.Classify(db.Begin(ctx, func(tx Conn) error { return fn(conn{s, tx}) }))
}

// now is the store's clock: UTC, as the database keeps it, without a
// monotonic reading, so values it hands back compare equal (even with ==)
// to what a later read returns.
func (s *Store) now() time.Time { return s.d.Stored(time.Now().UTC()) }

// orNow is t as stored, or now when t is zero.
func (s *Store) orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return s.d.Stored(t)
}

// rawJSON validates an opaque JSON value; empty is stored as NULL.
func (s *Store) rawJSON(field string, v json.RawMessage) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if !json.Valid(v) {
		return nil, fmt.Errorf("%s is not valid JSON", field)
	}
	// Bytes that are not UTF-8 can only sit inside JSON strings, where
	// U+FFFD keeps the value valid.
	return s.d.Text(string(v)), nil
}

// sessionExists reports whether id is a session.
func (s *Store) sessionExists(ctx context.Context, q conn, id string) (bool, error) {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = ?`, id).Scan(&one)
	if s.d.IsNoRows(err) {
		return false, nil
	}
	return err == nil, err
}

// requireSession is ErrNotFound unless id is a session.
func (s *Store) requireSession(ctx context.Context, q conn, id string) error {
	ok, err := s.sessionExists(ctx, q, id)
	if err == nil && !ok {
		err = fmt.Errorf("session %q: %w", id, persistence.ErrNotFound)
	}
	return err
}

// lockSession takes the session row's lock where the database has row
// locks (writers of one session then run one at a time); notFound is the
// error for an unknown session.
func (s *Store) lockSession(ctx context.Context, tx conn, id string, notFound error) error {
	if !s.d.RowLocks {
		return nil
	}
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = ?{for_update}`, id).Scan(&one)
	if s.d.IsNoRows(err) {
		return notFound
	}
	return err
}

// bumpSession reserves n seqs for session id, moves its updated_at strictly
// forward (to at least at) and returns the session's new last seq. With row
// locks, the UPDATE locks the session row until the transaction ends, which
// serialises every writer of the session, in this process or any other. It
// returns persistence.ErrNotFound for an unknown session.
func (s *Store) bumpSession(ctx context.Context, tx conn, id string, n int, at any) (lastSeq int64, err error) {
	err = tx.QueryRow(ctx, `
		UPDATE sessions SET last_seq = last_seq + ?, updated_at = {later}
		WHERE id = ?
		RETURNING last_seq`, n, at, id).Scan(&lastSeq)
	if s.d.IsNoRows(err) {
		return 0, fmt.Errorf("session %q: %w", id, persistence.ErrNotFound)
	}
	return lastSeq, err
}

// collect reads rows with scan and closes them.
func collect[T any](rows Rows, err error, scan func(r Row) (T, error)) ([]T, error) {
	return collectN(rows, err, 0, scan)
}

// collectN is collect with room made for n rows.
func collectN[T any](rows Rows, err error, n int, scan func(r Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	if n > 0 {
		out = make([]T, 0, n)
	}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ErrNoRowsIs is a Dialect.IsNoRows for a driver's sentinel.
func ErrNoRowsIs(sentinel error) func(error) bool {
	return func(err error) bool { return errors.Is(err, sentinel) }
}
