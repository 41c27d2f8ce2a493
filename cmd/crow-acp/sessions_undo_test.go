package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// seedUndoSession stores a session in env.Dir whose two prompts changed
// files through checkpointed tool writes: prompt 1 edits a.txt and
// creates new.txt, prompt 2 edits b.txt.
func seedUndoSession(t *testing.T, env fixture.Env) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess := &persistence.Session{ID: "sess_u", Cwd: env.Dir}
	must(t, s.CreateSession(ctx, sess))
	rec := &checkpoint.Recorder{Store: s}
	for _, f := range []struct{ name, text string }{{"a.txt", "a before\n"}, {"b.txt", "b before\n"}} {
		must(t, os.WriteFile(filepath.Join(env.Dir, f.name), []byte(f.text), 0o644))
	}
	write := func(turn int64, name, text string) {
		p := filepath.Join(env.Dir, name)
		must(t, rec.BeforeChange(ctx, sess, turn, p))
		must(t, os.WriteFile(p, []byte(text), 0o644))
		must(t, rec.AfterChange(ctx, sess, turn, p))
	}
	for i, edits := range [][][2]string{{{"a.txt", "a by the agent\n"}, {"new.txt", "created\n"}}, {{"b.txt", "b by the agent\n"}}} {
		u := &persistence.Message{Role: persistence.RoleUser, Content: "prompt " + string(rune('1'+i)), Status: persistence.StatusComplete}
		must(t, s.AppendMessages(ctx, sess.ID, u))
		for _, e := range edits {
			write(u.Seq, e[0], e[1])
		}
		must(t, s.AppendMessages(ctx, sess.ID, &persistence.Message{Role: persistence.RoleAssistant, Content: "done", Status: persistence.StatusComplete}))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestSessionsUndo: sessions undo --dry-run changes nothing; undo --to 1
// restores, deletes and skips (a file the user changed) and says so file
// by file; show marks the undone prompts and counts the checkpoints; an
// export carries them into another database; redo puts it all back.
func TestSessionsUndo(t *testing.T) {
	env := fixture.NewEnv(t)
	vars := map[string]string{"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp, "XDG_DATA_HOME": env.Tmp}
	seedUndoSession(t, env)
	cli := commandLines(vars)
	a, b, created := filepath.Join(env.Dir, "a.txt"), filepath.Join(env.Dir, "b.txt"), filepath.Join(env.Dir, "new.txt")

	code, out := both(cli("sessions", "undo", "sess_u", "--to", "1", "--dry-run"))
	if code != exitOK || !strings.Contains(out, "would be restored a.txt") || !strings.Contains(out, "would be deleted new.txt") ||
		!strings.Contains(out, "would undo prompts 1 to 2 of sess_u") {
		t.Fatalf("dry run: %d\n%s", code, out)
	}
	if readFile(t, a) != "a by the agent\n" {
		t.Fatal("the dry run changed a.txt")
	}
	must(t, os.WriteFile(b, []byte("b by the user\n"), 0o644))
	code, stdout, stderr := cli("sessions", "undo", "sess_u", "--to", "1")
	for _, want := range []string{"restored a.txt\n", "deleted new.txt\n", "skipped b.txt: changed since the agent wrote it (--force restores it)\n", "-b by the user\n", "+b before\n"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("undo: %d, stdout lacks %q:\n%s%s", code, want, stdout, stderr)
		}
	}
	if !strings.Contains(stderr, "undid prompts 1 to 2 of sess_u: 1 restored, 1 deleted, 1 skipped") {
		t.Errorf("undo's summary: %q", stderr)
	}
	if readFile(t, a) != "a before\n" || readFile(t, b) != "b by the user\n" {
		t.Errorf("after undo: a %q, b %q", readFile(t, a), readFile(t, b))
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("new.txt was not deleted: %v", err)
	}
	code, out = both(cli("sessions", "show", "sess_u"))
	if code != exitOK || strings.Count(out, "[undone]") != 4 || !strings.Contains(out, "checkpoints 3 files, 0 work-tree snapshots") ||
		!strings.Contains(out, "(4 undone)") || strings.Contains(out, "compacted") {
		t.Errorf("show after undo: %d\n%s", code, out)
	}
	// Nothing left to undo.
	if code, out := both(cli("sessions", "undo", "sess_u")); code != exitUsage || !strings.Contains(out, "no prompt to undo") {
		t.Errorf("undo with every prompt undone: %d %s", code, out)
	}

	// Export and import into another database carry the checkpoints.
	exported := filepath.Join(env.Tmp, "u.json")
	if code, out := both(cli("sessions", "export", "sess_u", "--format", "json", "--output", exported)); code != exitOK {
		t.Fatalf("export: %d %s", code, out)
	}
	other := map[string]string{"CROW_DB": filepath.Join(env.Tmp, "other.db"), "XDG_CONFIG_HOME": env.Tmp, "XDG_DATA_HOME": env.Tmp}
	if code, out := both(commandLines(other)("sessions", "import", exported)); code != exitOK {
		t.Fatalf("import: %d %s", code, out)
	}
	if code, out := both(commandLines(other)("sessions", "show", "sess_u")); code != exitOK || !strings.Contains(out, "checkpoints 3 files") || strings.Count(out, "[undone]") != 4 {
		t.Errorf("show of the import: %d\n%s", code, out)
	}

	// Redo: the skipped file stays the user's; the others come back.
	code, out = both(cli("sessions", "redo", "sess_u"))
	if code != exitOK || readFile(t, a) != "a by the agent\n" || readFile(t, created) != "created\n" || readFile(t, b) != "b by the user\n" {
		t.Errorf("redo: %d\n%s\na %q new %q b %q", code, out, readFile(t, a), readFile(t, created), readFile(t, b))
	}
	if code, out := both(cli("sessions", "show", "sess_u")); code != exitOK || strings.Contains(out, "[undone]") {
		t.Errorf("show after redo: %d\n%s", code, out)
	}
	if code, out := both(cli("sessions", "redo", "sess_u")); code != exitError || !strings.Contains(out, "nothing to redo") {
		t.Errorf("second redo: %d %s", code, out)
	}
}

// TestSessionsUndoRefused: a session in use by a running crow-acp (its
// lease held), a prompt number it does not have and an unknown session
// are each refused, changing nothing.
func TestSessionsUndoRefused(t *testing.T) {
	env := fixture.NewEnv(t)
	vars := map[string]string{"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp, "XDG_DATA_HOME": env.Tmp}
	seedUndoSession(t, env)
	cli := commandLines(vars)
	if code, out := both(cli("sessions", "undo", "sess_u", "--to", "7")); code != exitUsage || !strings.Contains(out, "there is no prompt 7: the session has 2") {
		t.Errorf("--to 7: %d %s", code, out)
	}
	if code, out := both(cli("sessions", "undo", "nope")); code != exitNotFound {
		t.Errorf("unknown session: %d %s", code, out)
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, env.DBPath)
	must(t, err)
	must(t, s.AcquireLease(ctx, &persistence.Lease{SessionID: "sess_u", Owner: "server", PID: 4242, Host: "h"}, time.Hour, ""))
	s.Close()
	if code, out := both(cli("sessions", "undo", "sess_u")); code != exitError || !strings.Contains(out, "in use by crow-acp (pid 4242 on h)") {
		t.Errorf("leased session: %d %s", code, out)
	}
	if readFile(t, filepath.Join(env.Dir, "b.txt")) != "b by the agent\n" {
		t.Error("a refused undo changed b.txt")
	}
}

// TestSessionsUndoReportsInterrupted: an undo a killed process left
// unfinished is reported, file by file, before the next undo runs.
func TestSessionsUndoReportsInterrupted(t *testing.T) {
	env := fixture.NewEnv(t)
	vars := map[string]string{"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp, "XDG_DATA_HOME": env.Tmp}
	seedUndoSession(t, env)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, env.DBPath)
	must(t, err)
	state := func(text string) persistence.FileState {
		return persistence.FileState{Exists: true, Mode: 0o644, Hash: persistence.Hash([]byte(text))}
	}
	must(t, s.CreateUndo(ctx, &persistence.Undo{SessionID: "sess_u", FromTurn: 1, State: persistence.UndoPending, Files: []persistence.UndoFile{
		{Path: "a.txt", Action: persistence.UndoRestored, Before: state("a before\n"), Now: state("a by the agent\n")},
	}}))
	s.Close()
	code, stdout, stderr := commandLines(vars)("sessions", "undo", "sess_u", "--to", "2")
	if code != exitOK || !strings.Contains(stderr, "an interrupted undo of session sess_u") || !strings.Contains(stderr, "skipped a.txt: not reached: left as it was") {
		t.Errorf("undo after an interrupted one: %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "restored b.txt") {
		t.Errorf("the undo itself: %s", stdout)
	}
}
