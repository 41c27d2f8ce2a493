package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// procSetup is the start of the tests that drive crow-acp processes: the
// fake model, a fresh database, the environment naming both, and a project
// directory.
func procSetup(t *testing.T) (model *fakemodel.Server, db string, env map[string]string, cwd string) {
	t.Helper()
	model = fakemodel.Start()
	t.Cleanup(model.Close)
	db = filepath.Join(t.TempDir(), "crow.db")
	return model, db, map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": db}, t.TempDir()
}

// onBothStores runs test against a fresh SQLite file (dsn "") and a fresh
// PostgreSQL schema (skipped without one); procSetupOn uses the dsn.
func onBothStores(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, "") })
	t.Run("postgres", func(t *testing.T) { test(t, pgtest.URL(t)) })
}

// procSetupOn is procSetup on the store dsn names ("": a SQLite file).
func procSetupOn(t *testing.T, dsn string) (model *fakemodel.Server, db string, env map[string]string, cwd string) {
	t.Helper()
	model, db, env, cwd = procSetup(t)
	if dsn != "" {
		db, env["CROW_DB"] = dsn, dsn
	}
	return model, db, env, cwd
}

// chatCommand runs crow-acp with args in env's project against model, on
// a fresh database and configuration, as a person at a terminal would.
func chatCommand(t testing.TB, model *fakemodel.Server, env fixture.Env, args ...string) *exec.Cmd {
	t.Helper()
	cmd := command(t, map[string]string{"HOME": env.Tmp, "XDG_CONFIG_HOME": env.Tmp, "XDG_STATE_HOME": env.Tmp,
		"CROW_DB": env.DBPath, "OPENAI_BASE_URL": model.URL(), "TERM": "xterm"}, args...)
	cmd.Dir = env.Dir
	return cmd
}

// execCommand is chatCommand running exec with args.
func execCommand(t testing.TB, model *fakemodel.Server, env fixture.Env, args ...string) *exec.Cmd {
	t.Helper()
	return chatCommand(t, model, env, append([]string{"exec", "--cwd", env.Dir}, args...)...)
}

// runCall is the model's call of run_command with command.
func runCall(id, command string) fakemodel.ToolCall {
	args, _ := json.Marshal(map[string]string{"command": command})
	return fakemodel.ToolCall{ID: id, Name: "run_command", Arguments: string(args)}
}
