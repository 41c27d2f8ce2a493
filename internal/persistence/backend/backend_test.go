package backend

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

func TestParse(t *testing.T) {
	for dsn, want := range map[string]Kind{
		"postgres://u@h/db":        Postgres,
		"postgresql://u:pw@h/db":   Postgres,
		"PostgreSQL://h/db":        Postgres,
		"/var/lib/crow/crow.db":    SQLite,
		"crow.db":                  SQLite,
		"./dir://odd/crow.db":      SQLite,
		`C:\Users\me\crow.db`:      SQLite,
		"relative/postgres://x.db": SQLite,
	} {
		got, err := Parse(dsn)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", dsn, got, err, want)
		}
	}
	for _, dsn := range []string{"", "mysql://u@h/db", "sqlite://crow.db", "postgress://h/db"} {
		if kind, err := Parse(dsn); err == nil {
			t.Errorf("Parse(%q) = %q, want an error", dsn, kind)
		}
	}
	if _, err := Parse("mysql://h/db"); err == nil || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("Parse(mysql://) error %v does not name the scheme", err)
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe("postgres://crow:hunter2@db.example:5432/crow"); strings.Contains(got, "hunter2") || !strings.Contains(got, "db.example:5432") {
		t.Errorf("Describe = %q: want the host and no password", got)
	}
	if got := Describe("/a/b.db"); got != "/a/b.db" {
		t.Errorf("Describe(path) = %q", got)
	}
}

func TestOpenSQLite(t *testing.T) {
	opens[*sqlite.Store](t, filepath.Join(t.TempDir(), "crow.db"))
}

func TestOpenPostgres(t *testing.T) {
	opens[*postgres.Store](t, pgtest.URL(t))
}

// opens checks that Open(dsn) and OpenBackground(dsn) give a working store
// of type S.
func opens[S persistence.Recorder](t *testing.T, dsn string) {
	t.Helper()
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bg, err := OpenBackground(dsn, func(err error) error { return err })
	if err != nil {
		t.Fatal(err)
	}
	defer bg.Close()
	for i, s := range []Store{s, bg} {
		if _, ok := s.(S); !ok {
			t.Errorf("Open(%s) = %T, want %T", Describe(dsn), s, *new(S))
		}
		if err := s.CreateSession(t.Context(), &persistence.Session{ID: fmt.Sprint("a", i)}); err != nil {
			t.Error(err)
		}
	}
}

// Issue 13 case 6: a libpq keyword DSN selects PostgreSQL (pgx reads it),
// a malformed one is refused; neither is ever a SQLite file name, and
// Describe never shows its password.
func TestKeywordDSN(t *testing.T) {
	for _, dsn := range []string{
		"host=db.example user=crow password=hunter2 dbname=crow",
		"  host=db port=5432 password='hun ter2' sslmode=require",
		"dbname=crow",
		"password=hunter2 host=db",
	} {
		if kind, err := Parse(dsn); err != nil || kind != Postgres {
			t.Errorf("Parse(%q) = %q, %v; want postgres", dsn, kind, err)
		}
		if got := Describe(dsn); strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter2") {
			t.Errorf("Describe(%q) = %q shows the password", dsn, got)
		}
	}
	for _, dsn := range []string{"host=db bogus=1 password=hunter2", "host=db password='hunter2"} {
		kind, err := Parse(dsn)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want an error", dsn, kind)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the password: %v", err)
		}
		if got := Describe(dsn); strings.Contains(got, "hunter2") {
			t.Errorf("Describe(%q) = %q shows the password", dsn, got)
		}
	}
	// A path with = in a file name stays a path.
	if kind, err := Parse("./data/a=b.db"); err != nil || kind != SQLite {
		t.Errorf("Parse(./data/a=b.db) = %q, %v", kind, err)
	}
}

func TestOpenPostgresKeywordDSN(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable search_path=%s password='%s'",
		u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"), u.Query().Get("search_path"), pw)
	opens[*postgres.Store](t, dsn)
}
