package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence/postgres/pgtest"
)

// TestFixturesPostgres runs every scenario against the built binary with
// its sessions in PostgreSQL (CROW_DB is a postgres:// URL): the protocol
// behaves the same whatever the store, across process restarts too.
func TestFixturesPostgres(t *testing.T) {
	pgtest.ServerURL(t)
	bin := testBinary(t)
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := startModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		env.DBPath = pgtest.URL(t)
		return env, fixture.ProcessAgent(bin, nil, environ(fixtureEnv(f, env))), m
	})
}

// TestDatabaseSettingErrors: a store that cannot be used is a clear error at
// start-up, naming what is wrong and never the password.
func TestDatabaseSettingErrors(t *testing.T) {
	for _, c := range []struct {
		db   string
		code int
		want []string
	}{
		{"mysql://crow:hunter2@db.example/crow", exitUsage, []string{"CROW_DB", `unsupported database URL scheme "mysql"`}},
		// Nothing listens on port 1 of the loopback.
		{"postgres://crow:hunter2@127.0.0.1:1/crow?connect_timeout=5", exitError,
			[]string{"cannot open the session database postgres://crow:xxxxx@127.0.0.1:1/crow", "cannot connect", "connection refused"}},
		{"postgresql://crow:hunter2@127.0.0.1:notaport/crow", exitError, []string{"invalid URL", "invalid port"}},
	} {
		var stdout, stderr bytes.Buffer
		env := map[string]string{"CROW_DB": c.db, "OPENAI_API_KEY": "sk-x"}
		code := run(context.Background(), nil, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr},
			func(k string) string { return env[k] })
		out := stderr.String()
		if code != c.code {
			t.Errorf("CROW_DB=%s: exit code %d, want %d (stderr %q)", c.db, code, c.code, out)
		}
		if strings.Contains(out, "hunter2") || strings.Contains(stdout.String(), "hunter2") {
			t.Errorf("CROW_DB=%s: the password was printed: %s", c.db, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("CROW_DB=%s: stderr %q does not mention %q", c.db, out, w)
			}
		}
		if stdout.Len() != 0 {
			t.Errorf("CROW_DB=%s: wrote %q to stdout, which carries ACP frames only", c.db, stdout.String())
		}
	}
}

// TestConfigShowMasksDatabasePassword: `config show` names the PostgreSQL
// server but not the password.
func TestConfigShowMasksDatabasePassword(t *testing.T) {
	var stdout, stderr bytes.Buffer
	env := map[string]string{"CROW_DB": "postgres://crow:hunter2@db.example:5432/crow", "HOME": t.TempDir()}
	code := run(context.Background(), []string{"config", "show"}, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr},
		func(k string) string { return env[k] })
	if code != exitOK {
		t.Fatalf("config show: exit %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "postgres://crow:xxxxx@db.example:5432/crow") {
		t.Errorf("config show:\n%s\nwant the URL with its password masked", out)
	}
}
