package e2e

import (
	"testing"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
)

// fixtureDir holds the protocol fixtures (testdata/fixtures/README.md).
const fixtureDir = "../../../testdata/fixtures"

// TestFixturesBinary runs every scenario against the built binary over real
// stdio, the way editors run it.
func TestFixturesBinary(t *testing.T) {
	bin := binary(t)
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := crowtest.FixtureModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		return env, fixture.ProcessAgent(bin, nil, crowtest.Environ(crowtest.FixtureEnv(t, f, env))), m
	})
}

// TestFixturesPostgres runs every scenario against the built binary with
// its sessions in PostgreSQL (CROW_DB is a postgres:// URL): the protocol
// behaves the same whatever the store, across process restarts too.
func TestFixturesPostgres(t *testing.T) {
	pgtest.ServerURL(t)
	bin := binary(t)
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := crowtest.FixtureModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		env.DBPath = pgtest.URL(t)
		return env, fixture.ProcessAgent(bin, nil, crowtest.Environ(crowtest.FixtureEnv(t, f, env))), m
	})
}
