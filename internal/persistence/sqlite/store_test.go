package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/migrations"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
)

func TestConformance(t *testing.T) {
	path := persistencetest.SameDatabase(func(t *testing.T) string { return filepath.Join(t.TempDir(), "crow.db") })
	persistencetest.Conformance(t, persistencetest.Backend{
		Name: "sqlite", Migrations: migrations.SQLite, Precision: time.Nanosecond,
		Open: func(t *testing.T) (persistence.Store, error) { return Open(context.Background(), path(t)) },
		DB: func(t *testing.T) persistencetest.DB {
			db, err := sql.Open("sqlite3", "file:"+path(t)+"?"+pragmas)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			db.SetMaxOpenConns(1)
			return persistencetest.DB{
				Exec:     func(q string, args ...any) error { _, err := db.Exec(q, args...); return err },
				QueryRow: func(q string, args ...any) persistencetest.Row { return db.QueryRow(q, args...) },
				Migrate:  func(fsys fs.FS) error { return migrate(t.Context(), db, fsys, "m") },
			}
		},
		Boom: `CREATE TRIGGER boom BEFORE INSERT ON messages WHEN NEW.content = 'boom'
			BEGIN SELECT RAISE(ABORT, 'boom'); END`,
		V7: persistencetest.V7SQL{
			Event: `INSERT INTO events (id, stream, seq, connection_id, at, direction, turn, kind, method, body)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			Counter: `UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'`,
			At:      func(t time.Time) any { return t.UnixNano() },
		},
	})
}

// openStore is a store as Open makes it, with its pools for the tests
// that look at them.
type openStore struct {
	*Store
	*pools
}

func mustOpen(tb testing.TB, path string) *openStore {
	tb.Helper()
	p, err := open(context.Background(), path, pragmas)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return persistencetest.Opened(tb, &openStore{&Store{sqlcore.Opened(dialect, p.database())}, p}, nil)
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "crow")
	path := filepath.Join(dir, "crow.db")
	s := mustOpen(t, path)
	must(t, s.CreateSession(t.Context(), &persistence.Session{ID: "a"}))

	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o700}, {filepath.Dir(dir), 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, got, c.mode)
		}
	}
	// SQLite copies the database file's mode to its WAL and shared memory.
	for _, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got&0o077 != 0 {
			t.Errorf("%s: mode %v is readable by others", path+suffix, got)
		}
	}
}

func TestOpenOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir?with#odd%20chars", "my db?.sqlite")
	s := mustOpen(t, path)
	must(t, s.CreateSession(t.Context(), &persistence.Session{ID: "odd"}))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
	s2 := mustOpen(t, path)
	if _, err := s2.GetSession(t.Context(), "odd"); err != nil {
		t.Errorf("second Open of the same path: %v", err)
	}
}

func TestOpenRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	s := mustOpen(t, "rel/crow.db")
	must(t, s.CreateSession(t.Context(), &persistence.Session{ID: "r"}))
	if _, err := os.Stat("rel/crow.db"); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(t.Context(), ""); err == nil {
		t.Error("Open(\"\"): no error")
	}
	// The parent "directory" is a file.
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o600))
	if _, err := Open(t.Context(), filepath.Join(file, "crow.db")); err == nil {
		t.Error("Open under a file: no error")
	}
	// Not a database.
	junk := filepath.Join(t.TempDir(), "junk.db")
	must(t, os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o600))
	if _, err := Open(t.Context(), junk); err == nil {
		t.Error("Open(junk file): no error")
	}
}

// TestPragmas checks that every connection of both pools has the DSN's
// pragmas, not only the first one.
func TestPragmas(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	ctx := t.Context()

	check := func(t *testing.T, conn *sql.Conn, queryOnly int) {
		t.Helper()
		for _, p := range []struct {
			pragma string
			want   string
		}{
			{"journal_mode", "wal"},
			{"foreign_keys", "1"},
			{"busy_timeout", "10000"},
			{"synchronous", "1"}, // NORMAL
			{"query_only", fmt.Sprint(queryOnly)},
			{"mmap_size", "0"}, // a mapped file cut under a read is SIGBUS
		} {
			var got string
			if err := conn.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(&got); err != nil {
				t.Fatalf("PRAGMA %s: %v", p.pragma, err)
			}
			if got != p.want {
				t.Errorf("PRAGMA %s = %s, want %s", p.pragma, got, p.want)
			}
		}
	}

	w, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(t, w, 0)
	w.Close()

	// Hold several read connections at once so each is a distinct one.
	var conns []*sql.Conn
	for range 4 {
		c, err := s.rdb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		check(t, c, 1)
		c.Close()
	}

	if _, err := s.rdb.ExecContext(ctx, `DELETE FROM sessions`); err == nil {
		t.Error("the read pool accepted a write")
	}
}

// TestTimeBeyond2262: SQLite keeps times to the nanosecond (the
// conformance suite's ExactRoundTrip), and refuses one it cannot.
func TestTimeBeyond2262(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	if err := s.CreateSession(t.Context(), &persistence.Session{ID: "y", CreatedAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("a time beyond 2262 was accepted")
	}
}

// TestCommitSurvivesProcessCrash kills a child process right after a
// commit, without Close, and checks that a new Open sees the data: with WAL
// and synchronous=NORMAL a commit is in the WAL file before it returns.
func TestCommitSurvivesProcessCrash(t *testing.T) {
	if path := os.Getenv("CROW_SQLITE_CRASH_DB"); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "crow.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCommitSurvivesProcessCrash$")
	cmd.Env = append(os.Environ(), "CROW_SQLITE_CRASH_DB="+path)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("child did not crash: %v\n%s", err, out)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL\n%s", err, out)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("want the commits still in a non-empty WAL file: %v", err)
	}

	s := mustOpen(t, path)
	msgs, err := s.Messages(t.Context(), "crash", persistence.MessageFilter{})
	if err != nil {
		t.Fatalf("after crash: %v", err)
	}
	if len(msgs) != 3 || msgs[2].Content != "last words" {
		t.Fatalf("after crash: %d messages, want the 3 committed ones", len(msgs))
	}
}

func crashChild(path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	err = s.CreateSession(ctx, &persistence.Session{ID: "crash"})
	for _, text := range []string{"one", "two", "last words"} {
		if err == nil {
			err = s.AppendMessages(ctx, "crash", &persistence.Message{Role: persistence.RoleUser, Content: text})
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestQueryPlans checks that the hot reads use an index for their order.
func TestQueryPlans(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	d := dialect
	for _, c := range []struct {
		query string
		args  []any
		index string
	}{
		{`SELECT ` + sqlcore.MessageColumns + ` FROM messages WHERE session_id = ? AND seq > ? AND is_active = 1 ORDER BY seq`,
			[]any{"s", 0}, "messages_active"},
		{`SELECT ` + sqlcore.MessageColumns + ` FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq`,
			[]any{"s", 0}, "sqlite_autoindex_messages_1"},
		{`SELECT ` + sqlcore.SessionColumns + ` FROM sessions WHERE 1 = 1 AND (updated_at < ? OR (updated_at = ? AND id > ?)) ORDER BY updated_at DESC, id ASC LIMIT ?`,
			[]any{1, 1, "x", 51}, "sessions_updated_at"},
		{`SELECT ` + sqlcore.SessionColumns + ` FROM sessions WHERE 1 = 1 AND cwd = ? ORDER BY updated_at DESC, id ASC LIMIT ?`,
			[]any{"/w", 51}, "sessions_cwd_updated_at"},
		{sqlcore.EventsQuery, []any{"s", 0}, "sqlite_autoindex_events_1 (stream_id=? AND seq>?)"},
		{sqlcore.MessagesQuery, []any{"s", 0, 10}, "sqlite_autoindex_messages_1"},
		{sqlcore.ActiveMessagesQuery, []any{"s", 0, 10}, "messages_active"},
	} {
		c.query = sqlcore.Rewrite(c.query, d.Fragments, d.Numbered)
		rows, err := s.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+c.query, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			must(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "; ")
		if !strings.Contains(joined, c.index) || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("plan for %.60q...: %s; want %s and no temp b-tree", c.query, joined, c.index)
		}
	}
}

// Migration 0006 removes the empty-program rules ("command:") the old
// first-word matcher stored for lines such as "(cd sub && ls)", which then
// approved any line starting with a metacharacter (issue 13 case 1).
func TestMigrationRemovesEmptyCommandRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crow.db")
	s := mustOpen(t, path)
	for _, k := range []string{"command:", "command: ", "command:ls", "edit"} {
		must(t, s.SetPermissionRule(t.Context(), &persistence.PermissionRule{Cwd: "/p", Key: k, Allow: true}))
	}
	// As a database written before 0006: the rules are there, 0006 is not.
	if _, err := s.db.ExecContext(t.Context(), `DELETE FROM schema_migrations WHERE version = 6`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := mustOpen(t, path)
	rules, err := s2.PermissionRules(t.Context(), "/p")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rules {
		keys = append(keys, r.Key)
	}
	if !slices.Equal(keys, []string{"command:ls", "edit"}) {
		t.Fatalf("rules after migration: %q", keys)
	}
}

// TestMessagesWhateverLastSeq: the room a read makes for a session's rows
// comes from its last_seq, which must neither lose rows when it is too low
// nor allocate without bound when it is damaged.
func TestMessagesWhateverLastSeq(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	ctx := t.Context()
	must(t, s.CreateSession(ctx, &persistence.Session{ID: "seq"}))
	for i := range 5 {
		must(t, s.AppendMessages(ctx, "seq", &persistence.Message{Role: persistence.RoleUser, Content: fmt.Sprint(i)}))
	}
	for _, last := range []int64{1 << 62, 2, 0, -7} {
		if _, err := s.db.ExecContext(ctx, `UPDATE sessions SET last_seq = ? WHERE id = 'seq'`, last); err != nil {
			t.Fatal(err)
		}
		msgs, err := s.Messages(ctx, "seq", persistence.MessageFilter{})
		if err != nil || len(msgs) != 5 || msgs[4].Content != "4" {
			t.Errorf("last_seq %d: %d messages, %v; want all 5", last, len(msgs), err)
		}
		if msgs, err := s.Messages(ctx, "seq", persistence.MessageFilter{AfterSeq: 3}); err != nil || len(msgs) != 2 {
			t.Errorf("last_seq %d, after seq 3: %d messages, %v; want 2", last, len(msgs), err)
		}
	}
	if _, err := s.Messages(ctx, "nope", persistence.MessageFilter{}); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("messages of an unknown session: %v, want ErrNotFound", err)
	}
}

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
