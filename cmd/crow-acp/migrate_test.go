package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// runCmd runs crow-acp in process with args, a home of its own, and no
// other setting; it returns the exit code, stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	home := t.TempDir()
	return commandLines(map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")})(args...)
}

// fillStore creates the sessions ids in the store dsn names.
func fillStore(t *testing.T, dsn string, ids ...string) {
	t.Helper()
	s, err := backend.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range ids {
		persistencetest.RichSession(t, s, id)
	}
}

// digests returns the content digest of every session of the store dsn
// names.
func digests(t *testing.T, dsn string) map[string]string {
	t.Helper()
	s, err := backend.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, _, err := s.ListSessions(t.Context(), persistence.ListSessionsOptions{Limit: persistence.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, sess := range list {
		d, err := persistence.Dump(t.Context(), s, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if out[sess.ID], err = persistence.Digest(d); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestMigrateSQLiteToSQLite(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a.db"), filepath.Join(dir, "sub", "b.db")
	fillStore(t, from, "one", "two")

	code, out, errOut := runCmd(t, "migrate", "--from", from, "--to", to, "-v")
	if code != exitOK {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"copying sessions from " + from + " to " + to,
		"  copied    one\n", "  copied    two\n",
		"2 sessions in the source: 2 copied, 0 already there and identical",
		fmt.Sprintf("verified in the destination: %d messages, %d compaction records and 0 events; content digests match",
			2*persistencetest.RichSessionMessages, 2*persistencetest.RichSessionCompactions),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, out)
		}
	}
	src, dst := digests(t, from), digests(t, to)
	if len(src) != 2 || len(dst) != 2 || src["one"] != dst["one"] || src["two"] != dst["two"] {
		t.Errorf("digests: source %v, destination %v", src, dst)
	}

	// Again: nothing to do, nothing duplicated.
	code, out, _ = runCmd(t, "migrate", "--from", from, "--to", to)
	if code != exitOK || !strings.Contains(out, "0 copied, 2 already there and identical") {
		t.Errorf("second migrate: exit %d\n%s", code, out)
	}
}

// TestMigrateThroughPostgres copies SQLite → PostgreSQL → SQLite and checks
// that the content survives both trips.
func TestMigrateThroughPostgres(t *testing.T) {
	pg := pgtest.URL(t)
	dir := t.TempDir()
	from, back := filepath.Join(dir, "a.db"), filepath.Join(dir, "back.db")
	fillStore(t, from, "one", "two", "three")

	for _, c := range [][2]string{{from, pg}, {pg, back}} {
		code, out, errOut := runCmd(t, "migrate", "--from", c[0], "--to", c[1])
		if code != exitOK || !strings.Contains(out, "3 copied") {
			t.Fatalf("migrate %s → %s: exit %d\n%s%s", backend.Describe(c[0]), backend.Describe(c[1]), code, out, errOut)
		}
	}
	src, mid, dst := digests(t, from), digests(t, pg), digests(t, back)
	for _, id := range []string{"one", "two", "three"} {
		if src[id] == "" || src[id] != mid[id] || src[id] != dst[id] {
			t.Errorf("%s: digests %s / %s / %s", id, src[id], mid[id], dst[id])
		}
	}
}

func TestMigrateConflict(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	fillStore(t, from, "same", "other")
	fillStore(t, to, "same") // created independently: different times
	before := digests(t, to)["same"]

	code, out, errOut := runCmd(t, "migrate", "--from", from, "--to", to)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(out, "  conflict  same\n") || !strings.Contains(out, "1 copied, 0 already there and identical, 1 in conflict") {
		t.Errorf("stdout:\n%s", out)
	}
	if !strings.Contains(errOut, "already in the destination with different content") {
		t.Errorf("stderr: %s", errOut)
	}
	if after := digests(t, to)["same"]; after != before {
		t.Error("the conflicting session was overwritten")
	}
}

func TestMigrateUsageErrors(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "a.db")
	fillStore(t, existing)
	missing := filepath.Join(dir, "typo.db")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"migrate", "--from", existing}, exitUsage, "both --from and --to are required"},
		{[]string{"migrate", "--from", existing, "--to", existing}, exitUsage, "the same store"},
		{[]string{"migrate", "--from", missing, "--to", filepath.Join(dir, "b.db")}, exitUsage, "no such database file"},
		{[]string{"migrate", "--from", existing, "--to", "mysql://u:hunter2@h/db"}, exitUsage, `--to: unsupported database URL scheme "mysql"`},
		{[]string{"migrate", "--from", existing, "--to", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5"}, exitError,
			"cannot open the destination postgres://u:xxxxx@127.0.0.1:1/db"},
		{[]string{"migrate", "--from", existing, "--to", filepath.Join(dir, "c.db"), "extra"}, exitUsage, `unexpected argument "extra"`},
	} {
		code, out, errOut := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
		if strings.Contains(out+errOut, "hunter2") {
			t.Errorf("%v: printed the password", c.args)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("migrate created the missing source file: %v", err)
	}
}

// TestMigrateServedSession: a session made by the real agent (exec: a turn
// against the fake model, its frames and lifecycle events logged) is copied
// SQLite → PostgreSQL, verifies there against its event log, and continues
// there.
func TestMigrateServedSession(t *testing.T) {
	pg := pgtest.URL(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "the answer", Chunks: 3})
	dir := t.TempDir()
	lite := filepath.Join(dir, "crow.db")
	runWith := func(db string, args ...string) (int, string, string) {
		return commandLines(map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "config"),
			"CROW_DB": db, "OPENAI_BASE_URL": m.URL(), "OPENAI_API_KEY": "sk-test", "CROW_MODEL": "m"})(args...)
	}
	if code, out, errOut := runWith(lite, "exec", "--cwd", dir, "say something"); code != exitOK {
		t.Fatalf("exec: exit %d\n%s%s", code, out, errOut)
	}
	ids := digests(t, lite)
	if len(ids) != 1 {
		t.Fatalf("%d sessions after exec, want 1", len(ids))
	}
	var id string
	for id = range ids {
	}

	code, out, errOut := runWith(lite, "migrate", "--from", lite, "--to", pg)
	if code != exitOK || !strings.Contains(out, "1 copied") || strings.Contains(out, " 0 events") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runWith(pg, "sessions", "verify", id); code != exitOK {
		t.Errorf("sessions verify on PostgreSQL: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runWith(pg, "exec", "--session", id, "and more"); code != exitOK || !strings.Contains(out, "the answer") {
		t.Errorf("exec --session on PostgreSQL: exit %d\n%s%s", code, out, errOut)
	}
	if got := digests(t, pg)[id]; got == ids[id] {
		t.Error("the continued session did not change")
	}
}
