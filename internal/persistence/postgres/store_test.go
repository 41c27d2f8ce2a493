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

	"github.com/crow-acp/crow-acp/internal/migrations"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
)

func TestConformance(t *testing.T) {
	pgtest.ServerURL(t)
	dsn := persistencetest.SameDatabase(func(t *testing.T) string { return pgtest.URL(t) })
	persistencetest.Conformance(t, persistencetest.Backend{
		Name: "postgres", Migrations: migrations.Postgres, Precision: time.Microsecond,
		Open: func(t *testing.T) (persistence.Store, error) { return Open(context.Background(), dsn(t)) },
		DB: func(t *testing.T) persistencetest.DB {
			pool, err := pgxpool.New(t.Context(), dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			numbered := func(q string) string { return sqlcore.Rewrite(q, sqlcore.Fragments{}, true) }
			return persistencetest.DB{
				Exec: func(q string, args ...any) error {
					_, err := pool.Exec(context.Background(), numbered(q), args...)
					return err
				},
				QueryRow: func(q string, args ...any) persistencetest.Row {
					return pool.QueryRow(context.Background(), numbered(q), args...)
				},
				Migrate: func(fsys fs.FS) error { return migrate(t.Context(), pool, fsys, "m") },
			}
		},
		Boom: `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'boom'; END $$;
			CREATE TRIGGER boom BEFORE INSERT ON messages
			FOR EACH ROW WHEN (NEW.content = 'boom') EXECUTE FUNCTION boom();`,
		V7: persistencetest.V7SQL{
			Event: `INSERT INTO events (id, stream, seq, connection_id, at, direction, turn, kind, method, body)
				OVERRIDING SYSTEM VALUE VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			Counter: `SELECT setval(pg_get_serial_sequence('events', 'id'), ?)`,
			At:      func(t time.Time) any { return t },
		},
	})
}

// openStore is a store as Open makes it, with its pool for the tests that
// look at it.
type openStore struct {
	*Store
	pool *pgxpool.Pool
}

func mustOpen(tb testing.TB, dsn string) *openStore {
	tb.Helper()
	pool, err := open(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return persistencetest.Opened(tb, &openStore{&Store{sqlcore.Opened(dialect, database(pool))}, pool}, nil)
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
	var n int
	if err := s.pool.QueryRow(t.Context(), `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(files) {
		t.Errorf("schema_migrations has %d rows (%v), want %d versions once each", n, err, len(files))
	}
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
	d := dialect
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
