package postgres

import (
	"context"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crow-acp/crow-acp/migrations"
	"testing"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/internal/sqlcore"
	"github.com/crow-acp/crow-acp/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/persistence/postgres/pgtest"
)

func TestConformance(t *testing.T) {
	pgtest.ServerURL(t)
	db := persistencetest.SameDatabase(func(t *testing.T) string { return pgtest.URL(t) })
	persistencetest.Conformance(t, func(t *testing.T) persistence.Store {
		return mustOpen(t, db(t))
	})
}

func mustOpen(tb testing.TB, dsn string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), dsn)
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

func TestOpenErrorsHidePassword(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		dsn  string
		want []string
	}{
		// Nothing listens on port 1 of the loopback.
		{"postgres://crow:s3cr%40t-pw@127.0.0.1:1/crow?connect_timeout=5", []string{"127.0.0.1", "cannot connect", "crow:xxxxx@"}},
		{"postgresql://crow:s3cr@t-pw@127.0.0.1:badport/crow", []string{"invalid URL"}},
		{"postgres://crow@127.0.0.1:1/crow?password=s3cr@t-pw&connect_timeout=5", []string{"cannot connect", "password=xxxxx"}},
		{"postgres://crow:s3cr@t-pw@127.0.0.1:5432/crow?sslmode=nonsense", []string{"invalid URL", "sslmode"}},
		{"/var/lib/crow.db", []string{"not a postgres:// or postgresql:// URL"}},
	} {
		_, err := Open(ctx, c.dsn)
		if err == nil {
			t.Errorf("Open(%s): no error", Redact(c.dsn))
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cr") || strings.Contains(msg, "t-pw") {
			t.Errorf("Open error shows the password: %s", msg)
		}
		for _, w := range append(c.want, "postgres: open") {
			if !strings.Contains(msg, w) {
				t.Errorf("Open error %q does not mention %q", msg, w)
			}
		}
	}
}

func TestRedact(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable":          "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db?password=pw":                      "postgres://u@h/db?password=xxxxx",
		"postgres://h/db?sslpassword=pw&sslmode=verify-full": "postgres://h/db?sslmode=verify-full&sslpassword=xxxxx",
		"postgresql://h/db":                                  "postgresql://h/db",
		"postgres://u:p w@h:x:y/%zz":                         "postgres://(unparseable URL)",
	} {
		if got := Redact(dsn); got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
	}
	for dsn, want := range map[string]bool{
		"postgres://h/db": true, "POSTGRESQL://h/db": true, "postgres:/h": false,
		"crow.db": false, "": false, "/tmp/postgres://x": false,
	} {
		if got := IsURL(dsn); got != want {
			t.Errorf("IsURL(%q) = %v", dsn, got)
		}
	}
}

// TestExactRoundTrip: PostgreSQL keeps times to the microsecond.
func TestExactRoundTrip(t *testing.T) {
	persistencetest.ExactRoundTrip(t, mustOpen(t, pgtest.URL(t)), time.Microsecond)
}

// TestAppendAtomicMidBatch fails the second insert of a batch inside the
// transaction and checks that the first one, the seq reservation and the
// UpdatedAt bump are all rolled back.
func TestAppendAtomicMidBatch(t *testing.T) {
	dsn := pgtest.URL(t)
	s := mustOpen(t, dsn)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `
		CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'boom'; END $$;
		CREATE TRIGGER boom BEFORE INSERT ON messages
		FOR EACH ROW WHEN (NEW.content = 'boom') EXECUTE FUNCTION boom();`); err != nil {
		t.Fatal(err)
	}
	persistencetest.AppendAtomicMidBatch(t, s, "postgres", func() (n int, err error) {
		err = s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM messages`).Scan(&n)
		return n, err
	})
}

func TestMigrationsRecordAndRefuseNewer(t *testing.T) {
	dsn := pgtest.URL(t)
	s := mustOpen(t, dsn)
	files, err := migrations.Load(migrations.Postgres, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	if got := schemaVersions(t, s.pool); len(got) != len(files) || got[len(got)-1] != files[len(files)-1].Version {
		t.Fatalf("schema_migrations = %v, want the %d embedded versions", got, len(files))
	}
	if err := s.CreateSession(t.Context(), &persistence.Session{ID: "keep"}); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, dsn) // reopening applies nothing and loses nothing
	if _, err := s2.GetSession(t.Context(), "keep"); err != nil {
		t.Errorf("data lost on reopen: %v", err)
	}
	if _, err := s.pool.Exec(t.Context(), `INSERT INTO schema_migrations (version) VALUES (999)`); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), dsn)
	if err == nil {
		t.Fatal("Open of a database from a newer binary: no error")
	}
	for _, want := range []string{"newer", "999", "upgrade crow-acp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestMigrateFailureRollsBack(t *testing.T) {
	s := mustOpen(t, pgtest.URL(t))
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `DROP TABLE schema_migrations`); err != nil {
		t.Fatal(err)
	}
	persistencetest.MigrateFailureRollsBack(t, persistencetest.Migrations{
		Migrate:  func(fsys fs.FS) error { return migrate(ctx, s.pool, fsys, "m") },
		Versions: func() []int { return schemaVersions(t, s.pool) },
		Tables: func() []string {
			rows, err := s.pool.Query(ctx, `SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()`)
			if err != nil {
				t.Fatal(err)
			}
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			return names
		},
		Count: func(table string) (n int) {
			if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	})
}

// TestConcurrentFirstOpen starts several stores at once on an empty schema,
// as a team's processes would after an upgrade: each migration runs once.
func TestConcurrentFirstOpen(t *testing.T) {
	dsn := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := Open(t.Context(), dsn)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s := mustOpen(t, dsn)
	files, _ := migrations.Load(migrations.Postgres, "postgres")
	if got := schemaVersions(t, s.pool); len(got) != len(files) {
		t.Errorf("schema_migrations = %v, want %d versions once each", got, len(files))
	}
}

func TestErrorsNameTheOperation(t *testing.T) {
	s := mustOpen(t, pgtest.URL(t))
	persistencetest.ErrorsNameTheOperation(t, s, "postgres")
}

// TestQueryPlans checks that the hot reads can use an index for their order
// (with sequential scans disabled: on tiny test tables the planner would
// rightly prefer them).
func TestQueryPlans(t *testing.T) {
	s := mustOpen(t, pgtest.URL(t))
	ctx := t.Context()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off; SET enable_bitmapscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET enable_seqscan; RESET enable_bitmapscan`)
	d := dialect(s.pool)
	for _, c := range []struct {
		query string
		index string
		args  []any
	}{
		{`SELECT ` + sqlcore.MessageColumns + ` FROM messages WHERE session_id = 's' AND seq > 0 AND is_active ORDER BY seq`, "messages_active", nil},
		{`SELECT ` + sqlcore.MessageColumns + ` FROM messages WHERE session_id = 's' AND seq > 0 ORDER BY seq`, "messages_session_id_seq_key", nil},
		{`SELECT ` + sqlcore.SessionColumns + ` FROM sessions WHERE 1 = 1 AND (updated_at < now() OR (updated_at = now() AND id > 'x')) ORDER BY updated_at DESC, id ASC LIMIT 51`, "sessions_updated_at", nil},
		{`SELECT ` + sqlcore.SessionColumns + ` FROM sessions WHERE 1 = 1 AND cwd = '/w' ORDER BY updated_at DESC, id ASC LIMIT 51`, "sessions_cwd_updated_at", nil},
		{strings.NewReplacer("stream = ?", "stream = 's'", "seq > ?", "seq > 0").Replace(sqlcore.EventsQuery), "events_stream_id_seq_key", nil},
		{sqlcore.Rewrite(sqlcore.MessagesQuery, d.Fragments, d.Numbered), "messages_session_id_seq_key", []any{"s", 0, 10}},
		{sqlcore.Rewrite(sqlcore.ActiveMessagesQuery, d.Fragments, d.Numbered), "messages_active", []any{"s", 0, 10}},
	} {
		rows, err := conn.Query(ctx, "EXPLAIN "+c.query, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(plan, "; ")
		if !strings.Contains(joined, c.index) || strings.Contains(joined, "Sort") {
			t.Errorf("plan for %.60q...: %s; want %s and no sort", c.query, joined, c.index)
		}
	}
}

// poolAt7 is a pool on dsn's empty schema migrated up to 0.1.0's version 7,
// closed when t ends.
func poolAt7(t *testing.T, dsn string) *pgxpool.Pool {
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrate(t.Context(), pool, persistencetest.MigrationsUpTo(t, migrations.Postgres, "postgres", 7), "m"); err != nil {
		t.Fatal(err)
	}
	return pool
}

func schemaVersions(t *testing.T, pool interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) []int {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	v, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenMissingSchema: a search_path naming no existing schema is a clear
// error, not PostgreSQL's "no schema has been selected to create in".
func TestOpenMissingSchema(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "crow_no_such_schema")
	u.RawQuery = q.Encode()
	_, err = Open(t.Context(), u.String())
	if err == nil || !strings.Contains(err.Error(), `none of search_path "crow_no_such_schema"`) {
		t.Errorf("Open with a missing schema: %v", err)
	}
}

func TestPartsStoredOnce(t *testing.T) {
	s := mustOpen(t, pgtest.URL(t))
	persistencetest.PartsStoredOnce(t, s, persistencetest.PartsColumn{
		Get: func(t *testing.T, id int64) *string {
			var col *string
			if err := s.pool.QueryRow(t.Context(), `SELECT parts::text FROM messages WHERE id = $1`, id).Scan(&col); err != nil {
				t.Fatal(err)
			}
			return col
		},
		Set: func(t *testing.T, id int64, col string) {
			if _, err := s.pool.Exec(t.Context(), `UPDATE messages SET parts = $1::json WHERE id = $2`, col, id); err != nil {
				t.Fatal(err)
			}
		},
	})
}

func TestTextInRow(t *testing.T) {
	s := mustOpen(t, pgtest.URL(t))
	persistencetest.TextInRow(t, s, func(t *testing.T, id int64) (content string) {
		if err := s.pool.QueryRow(t.Context(), `SELECT content FROM messages WHERE id = $1`, id).Scan(&content); err != nil {
			t.Fatal(err)
		}
		return content
	})
}

// TestMigrateStreamNumbers: migration 0008 rebuilds a 0.1.0 (version 7) event log
// (streams and connections named by text) with them named by number, and
// nothing is lost (persistencetest.StreamNumbersMigrated).
func TestMigrateStreamNumbers(t *testing.T) {
	dsn := pgtest.URL(t)
	ctx := t.Context()
	pool := poolAt7(t, dsn)
	persistencetest.WriteStreamNumbersV7(t, func(q string, args ...any) error {
		_, err := pool.Exec(ctx, q, args...)
		return err
	}, persistencetest.V7SQL{
		Session: `INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, now(), now())`,
		Stream:  `INSERT INTO event_streams (stream, last_seq, last_turn) VALUES ($1, $2, $3)`,
		Event: `INSERT INTO events (id, stream, seq, connection_id, at, direction, turn, kind, method, body)
			OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		Counter: `SELECT setval(pg_get_serial_sequence('events', 'id'), $1)`,
		At:      func(t time.Time) any { return t },
	})
	persistencetest.StreamNumbersMigrated(t, mustOpen(t, dsn))
}

// TestUnreleasedFormatRefused: as on SQLite, a database a development
// build after 0.1.0 wrote is refused with an error that says what to do.
func TestUnreleasedFormatRefused(t *testing.T) {
	dsn := pgtest.URL(t)
	ctx := t.Context()
	pool := poolAt7(t, dsn)
	if _, err := pool.Exec(ctx, `ALTER TABLE messages ADD COLUMN content_at text;
		INSERT INTO schema_migrations VALUES (8, now()), (9, now()), (10, now())`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, dsn)
	if err == nil || !strings.Contains(err.Error(), "unreleased development build") {
		t.Fatalf("open: %v, want the unreleased-format error", err)
	}
}
