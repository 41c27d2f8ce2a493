package persistencetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/crow-acp/crow-acp/internal/migrations"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Backend is a backend under test: how to open its stores, and what the
// checks that look under the Store interface need of it.
type Backend struct {
	Name       string        // its error prefix and migrations directory: "sqlite"
	Migrations fs.FS         // its embedded migrations (migrations.SQLite)
	Precision  time.Duration // of the times it keeps
	// Open opens a store on t's database: a new, empty one for each
	// subtest t; called again with the same t, another, independent store
	// (its own connections, as another process would have) on that same
	// database. SameDatabase helps write it. The suite closes the store.
	Open func(t *testing.T) (persistence.Store, error)
	// DB opens t's database (the one Open opens) without a store, closed
	// when t ends.
	DB func(t *testing.T) DB
	// Boom is SQL that makes the database refuse to insert a message
	// whose content is "boom".
	Boom string
	// V7 is its SQL for the 0.1.0 events testMigrateStreamNumbers writes.
	V7 V7SQL
}

// V7SQL is a backend's SQL for oldEvents at version 7: an event by id,
// stream, seq, connection, at (At converts a time for the backend),
// direction, turn, kind, method and body; the event counter.
type V7SQL struct {
	Event, Counter string
	At             func(time.Time) any
}

// DB is a backend's database under its stores. Queries take ?
// placeholders.
type DB struct {
	Exec     func(query string, args ...any) error
	QueryRow func(query string, args ...any) Row
	Migrate  func(fsys fs.FS) error // applies the files of fsys's directory "m"
}

// Row is one result row.
type Row interface{ Scan(dest ...any) error }

// open opens a store on t's database, closed when t ends.
func (b Backend) open(t *testing.T) persistence.Store {
	t.Helper()
	s, err := b.Open(t)
	return Opened(t, s, err)
}

// Opened is what a test does with a store it opens: it fails tb with err,
// or returns s, closed when tb ends.
func Opened[S io.Closer](tb testing.TB, s S, err error) S {
	tb.Helper()
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// at opens t's database without a store, migrated up to version (0: none).
func (b Backend) at(t *testing.T, version int) DB {
	t.Helper()
	db := b.DB(t)
	if version > 0 {
		files, err := migrations.Load(b.Migrations, b.Name)
		if err != nil {
			t.Fatal(err)
		}
		fsys := fstest.MapFS{}
		for _, f := range files {
			if f.Version <= version {
				fsys["m/"+f.Name] = &fstest.MapFile{Data: []byte(f.SQL)}
			}
		}
		must(t, db.Migrate(fsys))
	}
	return db
}

func (db DB) mustExec(t *testing.T, query string, args ...any) {
	t.Helper()
	if err := db.Exec(query, args...); err != nil {
		t.Fatalf("%.50s: %v", query, err)
	}
}

func (db DB) count(t *testing.T, table string) (n int) {
	t.Helper()
	must(t, db.QueryRow(`SELECT COUNT(*) FROM `+table).Scan(&n))
	return n
}

// versions is the schema_migrations of db, in order (one query a
// version: DB reads single rows).
func (db DB) versions(t *testing.T) []int {
	t.Helper()
	var out []int
	for v := 0; ; {
		must(t, db.QueryRow(`SELECT COALESCE(MIN(version), 0) FROM schema_migrations WHERE version > ?`, v).Scan(&v))
		if v == 0 {
			return out
		}
		out = append(out, v)
	}
}

// testErrorsNameTheOperation checks that errors start with the backend's
// name and the operation that failed.
func testErrorsNameTheOperation(t *testing.T, b Backend) {
	s := b.open(t)
	ctx := t.Context()
	for _, c := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := s.GetSession(ctx, "x"); return err }(), "get session"},
		{s.UpdateSession(ctx, &persistence.Session{ID: "x"}), "update session"},
		{s.AppendMessages(ctx, "x", &persistence.Message{}), "append messages"},
		{func() error { _, err := s.Messages(ctx, "x", persistence.MessageFilter{}); return err }(), "messages"},
		{ApplyCompaction(ctx, s, &persistence.Compaction{SessionID: "x"}, nil), "compact"},
		{func() error { _, err := s.Compactions(ctx, "x"); return err }(), "compactions"},
		{func() error {
			_, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Cursor: "@"})
			return err
		}(), "list sessions: invalid cursor"},
	} {
		if want := b.Name + ": " + c.want; c.err == nil || !strings.HasPrefix(c.err.Error(), want) {
			t.Errorf("error %v, want prefix %q", c.err, want)
		}
	}
}

// testAppendAtomicMidBatch makes the database refuse the second message of
// a batch (Backend.Boom) and checks that the first one, the seq
// reservation and the UpdatedAt bump are all rolled back.
func testAppendAtomicMidBatch(t *testing.T, b Backend) {
	s := b.open(t)
	db := b.DB(t)
	db.mustExec(t, b.Boom)
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "a"})
	before := mustGet(t, s, "a")

	ok := &persistence.Message{Role: persistence.RoleUser, Content: "fine"}
	bad := &persistence.Message{Role: persistence.RoleUser, Content: "boom"}
	err := s.AppendMessages(ctx, "a", ok, bad)
	if want := b.Name + ": append messages: message 1: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want one wrapped with the operation and the message index", err)
	}
	if ok.ID != 0 || ok.Seq != 0 {
		t.Errorf("rolled-back message was filled: %+v", ok)
	}
	if n := db.count(t, "messages"); n != 0 {
		t.Errorf("%d messages after rollback, want 0", n)
	}
	if after := mustGet(t, s, "a"); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Error("rollback kept the UpdatedAt bump")
	}
	checkNextSeq(t, s, "a", 1, "seq after rollback")
}

// ApplyCompaction is Compact with at most one added message, the summary
// (nil: none): what most tests of compaction need.
func ApplyCompaction(ctx context.Context, s persistence.Store, c *persistence.Compaction, summary *persistence.Message) error {
	var added []*persistence.Message
	if summary != nil {
		added = []*persistence.Message{summary}
	}
	return s.Compact(ctx, c, added)
}

// testExactRoundTrip checks what the contract leaves loose, on a backend
// that keeps times to b.Precision: a time is handed back as it is stored
// and read back equal and in UTC, JSON keeps its bytes, nil and empty
// slices stay apart, and empty JSON is stored as none.
func testExactRoundTrip(t *testing.T, b Backend) {
	s, prec := b.open(t), b.Precision
	ctx := t.Context()
	at := time.Date(2031, 12, 31, 23, 59, 59, 987654321, time.FixedZone("X", -7*3600))
	kept := at.Truncate(prec)
	meta := json.RawMessage(`{ "b": 1,  "a": [true, null], "b": 2 }`)
	sess := &persistence.Session{ID: "x", CreatedAt: at, UpdatedAt: at.Add(prec), Metadata: meta}
	mustCreate(t, s, sess)
	got := mustGet(t, s, "x")
	if !sess.CreatedAt.Equal(kept) || !got.CreatedAt.Equal(kept) || !got.UpdatedAt.Equal(kept.Add(prec)) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("times handed back %v, read back %v, %v; want %v and +%v, in UTC", sess.CreatedAt, got.CreatedAt, got.UpdatedAt, kept, prec)
	}
	if string(got.Metadata) != string(meta) {
		t.Errorf("Metadata = %s, want the same bytes %s", got.Metadata, meta)
	}
	mustCreate(t, s, &persistence.Session{ID: "empty", Metadata: json.RawMessage{}})
	if got := mustGet(t, s, "empty"); len(got.Metadata) != 0 {
		t.Errorf("empty Metadata came back as %s", got.Metadata)
	}
	must(t, s.UpdateSession(ctx, sess))
	if got := mustGet(t, s, "x"); !got.UpdatedAt.Equal(sess.UpdatedAt) {
		t.Errorf("UpdateSession handed back %v, stored %v", sess.UpdatedAt, got.UpdatedAt)
	}

	nilMsg := &persistence.Message{Role: persistence.RoleUser, CreatedAt: at}
	emptyMsg := &persistence.Message{Role: persistence.RoleUser, Parts: []persistence.Part{}, ToolCalls: []persistence.ToolCall{},
		Meta: json.RawMessage{}, Content: "ünïcödé ✓ \t\n", TokenCount: 1 << 40}
	mustAppend(t, s, "x", nilMsg, emptyMsg)
	msgs := mustMessages(t, s, "x", persistence.MessageFilter{})
	if msgs[0].Parts != nil || msgs[0].ToolCalls != nil || msgs[0].Meta != nil || msgs[0].Content != "" || msgs[0].Status != "" {
		t.Errorf("nil fields came back non-nil: %+v", msgs[0])
	}
	if msgs[1].Parts == nil || msgs[1].ToolCalls == nil || len(msgs[1].Meta) != 0 {
		t.Errorf("empty slices came back nil, or empty Meta as %s: %+v", msgs[1].Meta, msgs[1])
	}
	if msgs[1].Content != emptyMsg.Content || msgs[1].TokenCount != 1<<40 {
		t.Errorf("message 2 = %q, %d tokens", msgs[1].Content, msgs[1].TokenCount)
	}
	// A store-assigned time compares equal even with ==.
	if !msgs[0].CreatedAt.Equal(kept) || !nilMsg.CreatedAt.Equal(kept) || msgs[1].CreatedAt != emptyMsg.CreatedAt {
		t.Errorf("message times %v, %v; handed back %v, %v", msgs[0].CreatedAt, msgs[1].CreatedAt, nilMsg.CreatedAt, emptyMsg.CreatedAt)
	}

	c := &persistence.Compaction{SessionID: "x", Policy: "p", CompactedIDs: []int64{}, CreatedAt: at}
	mustCompact(t, s, c)
	cs, err := s.Compactions(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].CompactedIDs == nil || cs[0].KeptIDs != nil || len(cs[0].Settings) != 0 || cs[0].SummaryMessageID != nil {
		t.Errorf("CompactedIDs %#v (want empty), KeptIDs %#v, Settings %s, SummaryMessageID %v (want none)",
			cs[0].CompactedIDs, cs[0].KeptIDs, cs[0].Settings, cs[0].SummaryMessageID)
	}
	if !cs[0].CreatedAt.Equal(kept) || !c.CreatedAt.Equal(kept) {
		t.Errorf("compaction CreatedAt %v, handed back %v; want %v", cs[0].CreatedAt, c.CreatedAt, kept)
	}
}

// testMigrationsRecordAndRefuseNewer: opening records every embedded
// migration; opening again applies nothing and loses nothing; a database
// recording a version newer than the newest file is refused.
func testMigrationsRecordAndRefuseNewer(t *testing.T, b Backend) {
	s := b.open(t)
	mustCreate(t, s, &persistence.Session{ID: "keep"})
	files, err := migrations.Load(b.Migrations, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for _, f := range files {
		want = append(want, f.Version)
	}
	db := b.DB(t)
	if got := db.versions(t); !slices.Equal(got, want) {
		t.Fatalf("schema_migrations = %v, want %v", got, want)
	}
	s2 := b.open(t)
	if got := db.versions(t); !slices.Equal(got, want) {
		t.Errorf("after reopen schema_migrations = %v, want %v", got, want)
	}
	if _, err := s2.GetSession(t.Context(), "keep"); err != nil {
		t.Errorf("data lost on reopen: %v", err)
	}

	db.mustExec(t, `INSERT INTO schema_migrations (version, applied_at) VALUES (999, '2030-01-01T00:00:00Z')`)
	if _, err = b.Open(t); err == nil {
		t.Fatal("Open of a database from a newer binary: no error")
	}
	for _, w := range []string{"newer", "999", fmt.Sprintf("(%d)", want[len(want)-1]), "upgrade crow-acp"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// testMigrateFailureRollsBack checks, on an empty database, that a broken
// migration leaves nothing of itself and names its file, that a file of
// several statements applies whole, that a second run applies nothing, and
// that a lower version arriving after a higher one is still applied.
func testMigrateFailureRollsBack(t *testing.T, b Backend) {
	db := b.DB(t)
	fsys := fstest.MapFS{
		"m/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
		"m/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER);\nTHIS IS NOT SQL;")},
	}
	if err := db.Migrate(fsys); err == nil || !strings.Contains(err.Error(), "0002_b.sql") {
		t.Fatalf("migrate with a broken file: error = %v, want one naming 0002_b.sql", err)
	}
	if got := db.versions(t); !slices.Equal(got, []int{1}) {
		t.Errorf("schema_migrations = %v, want [1]", got)
	}
	if db.count(t, "a") != 0 || db.Exec(`SELECT COUNT(*) FROM b`) == nil {
		t.Errorf("want table a, and no trace of the failed b")
	}
	fsys["m/0002_b.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE b (x INTEGER);")}
	fsys["m/0003_c.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE c (x INTEGER); INSERT INTO c VALUES (1), (2);")}
	for _, run := range []string{"after the fix", "again"} {
		if err := db.Migrate(fsys); err != nil {
			t.Fatalf("migrate %s: %v", run, err)
		}
		if got := db.versions(t); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("migrate %s: schema_migrations = %v, want [1 2 3]", run, got)
		}
	}
	if n := db.count(t, "c"); n != 2 {
		t.Errorf("multi-statement migration: %d rows, want 2", n)
	}
	// Versions are reserved per feature and land in any order.
	for _, f := range []string{"0005_e", "0004_d"} {
		fsys["m/"+f+".sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE " + f[5:] + " (x INTEGER);")}
		must(t, db.Migrate(fsys))
	}
	if got := db.versions(t); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("schema_migrations = %v, want [1 2 3 4 5] (a late lower version applied)", got)
	}
}

// testUnreleasedFormatRefused: a database a development build after 0.1.0
// wrote (its versions 8 to 10: a content_at column, or version 8 over the
// old event table) is refused with an error that says what to do, and
// left as it was.
func testUnreleasedFormatRefused(t *testing.T, b Backend) {
	for name, marks := range map[string][]string{
		"0008 to 0010": {`ALTER TABLE messages ADD COLUMN content_at TEXT`,
			`INSERT INTO schema_migrations (version, applied_at) VALUES (8, '2026-01-01T00:00:00Z'), (9, '2026-01-01T00:00:00Z'), (10, '2026-01-01T00:00:00Z')`},
		"0008 alone": {`INSERT INTO schema_migrations (version, applied_at) VALUES (8, '2026-01-01T00:00:00Z')`},
	} {
		t.Run(name, func(t *testing.T) {
			db := b.at(t, 7)
			for _, q := range marks {
				db.mustExec(t, q)
			}
			before := db.versions(t)
			_, err := b.Open(t)
			if err == nil || !strings.Contains(err.Error(), "unreleased development build") || !strings.Contains(err.Error(), "crow-acp sessions export") ||
				!strings.Contains(err.Error(), "crow-acp sessions import") {
				t.Fatalf("open: %v, want the unreleased-format error", err)
			}
			if got := db.versions(t); !slices.Equal(got, before) {
				t.Errorf("the database was changed: versions %v, were %v", got, before)
			}
		})
	}
}
