package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
)

// TestUndoCommandLine: on each store, a turn that ran `sed -i` in a git
// work tree and wrote a file with a tool is undone by the binary's
// `sessions undo` to the exact bytes and modes; `sessions show` counts the
// checkpoints and marks the undone prompt.
func TestUndoCommandLine(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	onBothStores(t, func(t *testing.T, dsn string) {
		if dsn == "" {
			dsn = filepath.Join(t.TempDir(), "crow.db")
		}
		testUndoCommandLine(t, dsn)
	})
}

func testUndoCommandLine(t *testing.T, db string) {
	ctx := context.Background()
	home, data, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	gitEnv := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = cwd, gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	files := map[string]struct {
		text string
		mode os.FileMode
	}{"script.sh": {"#!/bin/sh\necho two\n", 0o755}, "notes.txt": {"one\r\ntwo\r\n", 0o644}}
	for n, f := range files {
		if err := os.WriteFile(filepath.Join(cwd, n), []byte(f.text), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "start")

	store, err := backend.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	sess := &persistence.Session{ID: "sess_undo", Cwd: cwd}
	prompt := &persistence.Message{Role: persistence.RoleUser, Content: "rename two", Status: persistence.StatusComplete}
	for _, err := range []error{store.CreateSession(ctx, sess), store.AppendMessages(ctx, sess.ID, prompt)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := &checkpoint.Recorder{Store: store, Trees: filepath.Join(data, "crow-acp", "worktrees")}
	if err := rec.SnapshotWorkTree(ctx, sess, prompt.Seq); err != nil {
		t.Fatal(err)
	}
	sed := exec.Command("sed", "-i", "s/two/TWO/", "script.sh", "notes.txt")
	sed.Dir = cwd
	if out, err := sed.CombinedOutput(); err != nil {
		t.Fatalf("sed: %v %s", err, out)
	}
	tool := filepath.Join(cwd, "tool.txt")
	for _, step := range []func() error{
		func() error { return rec.BeforeChange(ctx, sess, prompt.Seq, tool) },
		func() error { return os.WriteFile(tool, []byte("by a tool\n"), 0o600) },
		func() error { return rec.AfterChange(ctx, sess, prompt.Seq, tool) },
		func() error { return rec.EndTurn(ctx, sess, prompt.Seq) },
		func() error {
			return store.AppendMessages(ctx, sess.ID, &persistence.Message{Role: persistence.RoleAssistant, Content: "renamed", Status: persistence.StatusComplete})
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()

	vars := map[string]string{"CROW_DB": db, "HOME": home, "XDG_DATA_HOME": data}
	out := mustRun(t, vars, "sessions", "undo", "sess_undo")
	for _, want := range []string{"restored script.sh\n", "restored notes.txt\n", "deleted tool.txt\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("undo's report lacks %q:\n%s", want, out)
		}
	}
	for n, f := range files {
		b, err := os.ReadFile(filepath.Join(cwd, n))
		fi, _ := os.Stat(filepath.Join(cwd, n))
		if err != nil || string(b) != f.text || fi.Mode().Perm() != f.mode {
			t.Errorf("%s after undo: %q %v, want %q %v", n, b, fi.Mode(), f.text, f.mode)
		}
	}
	if _, err := os.Stat(tool); !os.IsNotExist(err) {
		t.Errorf("tool.txt after undo: %v", err)
	}
	show := mustRun(t, vars, "sessions", "show", "sess_undo")
	if !strings.Contains(show, "checkpoints 1 file, 2 work-tree snapshots") || strings.Count(show, "[undone]") != 2 {
		t.Errorf("show:\n%s", show)
	}
	mustRun(t, vars, "sessions", "verify", "sess_undo")
}
