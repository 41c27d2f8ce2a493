package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// fixtureDir holds the protocol fixtures (testdata/fixtures/README.md);
// ./e2e runs them against the binary too.
const fixtureDir = "../../testdata/fixtures"

// pipeAgent runs crow-acp in process over pipes with vars (a fixture's
// environment, crowtest.FixtureEnv).
func pipeAgent(vars map[string]string) fixture.Starter {
	return fixture.PipeAgent(func(ctx context.Context, _ fixture.Env, in io.Reader, out io.Writer) error {
		code := run(ctx, nil, stdio{in: in, out: out, err: io.Discard}, func(k string) string { return vars[k] })
		if code != exitOK {
			return fmt.Errorf("crow-acp exited with code %d", code)
		}
		return nil
	})
}

// TestFixtures runs every scenario in-process, over pipes.
func TestFixtures(t *testing.T) {
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := crowtest.FixtureModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		return env, pipeAgent(crowtest.FixtureEnv(t, f, env)), m
	})
}

// TestFixturesRebuild runs every fixture scenario in-process and then proves
// that each session's messages and compactions, rebuilt from its event log,
// equal the live tables, and that the log holds the session's frames.
func TestFixturesRebuild(t *testing.T) {
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := crowtest.FixtureModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		t.Cleanup(func() { crowtest.VerifySessions(t, env.DBPath) })
		return env, pipeAgent(crowtest.FixtureEnv(t, f, env)), m
	})
}

// providerDir is the provider corpus: one fixture per provider family,
// replaying the provider's stream shapes (-- sse NAME -- sections) against
// a fake model that enforces the provider's request rules (-- provider --).
// testdata/providers/README.md describes the format.
const providerDir = "../../testdata/providers"

// TestProviderCorpus runs every provider fixture in-process, over pipes.
func TestProviderCorpus(t *testing.T) {
	fixture.RunDir(t, providerDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := startProviderModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		return env, pipeAgent(crowtest.FixtureEnv(t, f, env)), m
	})
}

// startProviderModel starts a fake model with the fixture's rules and its
// replies, raw stream bodies filled in.
func startProviderModel(t *testing.T, f *fixture.Fixture) *fakemodel.Server {
	t.Helper()
	discovery, ruleText, err := fakemodel.ParseDiscovery(f.Provider)
	if err != nil {
		t.Fatalf("%s: provider section: %v", f.Name, err)
	}
	rules, err := fakemodel.ParseRules(ruleText)
	if err != nil {
		t.Fatalf("%s: provider section: %v", f.Name, err)
	}
	replies, err := fakemodel.ParseScript(bytes.NewReader(f.Model))
	if err != nil {
		t.Fatalf("%s: model section: %v", f.Name, err)
	}
	if err := fakemodel.UseSSE(replies, f.SSE); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetRules(rules...)
	if discovery != nil {
		m.SetDiscovery(*discovery)
	}
	m.Enqueue(replies...)
	return m
}
