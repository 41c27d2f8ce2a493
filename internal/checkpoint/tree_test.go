package checkpoint_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/safegit/safegittest"
)

// useTrapEnv makes the trap's user configuration (a filter in
// ~/.gitconfig) this process's, as the user's would be.
func useTrapEnv(t *testing.T, tr *safegittest.Trap) {
	for _, kv := range tr.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM":
			t.Setenv(k, v)
		}
	}
}

// TestSnapshotUndoesCommand: a `sed -i` run by a command in a git work
// tree, and a file a command created, are undone to the exact bytes and
// modes; the user's .git (index, refs, stash, config, hooks) is byte for
// byte as it was, and nothing its configuration names ran.
func TestSnapshotUndoesCommand(t *testing.T) {
	tr := safegittest.NewTrap(t, false)
	useTrapEnv(t, tr)
	dir := tr.Dir
	// A stash and a ref of the user's, which must survive untouched.
	write(t, filepath.Join(dir, "stashed.txt"), "stash me\n", 0o644)
	gitCmd(t, dir, tr.Env, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "add", "stashed.txt")
	gitCmd(t, dir, tr.Env, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "filter.evilclean.clean=cat", "-c", "filter.eviluser.clean=cat", "-c", "filter.evilincluded.clean=cat", "stash", "push", "-q", "--", "stashed.txt")
	// The setup's own git commands may have run traps: start counting now.
	for _, m := range tr.Ran(t) {
		must(t, os.Remove(filepath.Join(tr.Markers, m)))
	}

	write(t, filepath.Join(dir, "script.sh"), "#!/bin/sh\necho one\necho two\n", 0o755)
	write(t, filepath.Join(dir, "notes.txt"), "keep\r\nCRLF\r\nbytes\n", 0o644)
	must(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("ignored/\n"), 0o644))
	write(t, filepath.Join(dir, "ignored", "cache.bin"), "ignored\n", 0o644)
	before := tree(t, dir, false)
	gitBefore := tree(t, filepath.Join(dir, ".git"), true)

	e := newEnv(t, dir)
	ctx := t.Context()
	turn := e.prompt("run sed")
	must(t, e.rec.SnapshotWorkTree(ctx, e.sess, turn))
	must(t, e.rec.SnapshotWorkTree(ctx, e.sess, turn)) // once per turn
	sed := exec.Command("sed", "-i", "s/two/TWO/; s/CRLF/crlf/; s/same/SAME/", "script.sh", "notes.txt", "x.a")
	sed.Dir = dir
	if out, err := sed.CombinedOutput(); err != nil {
		t.Fatalf("sed: %v %s", err, out)
	}
	write(t, filepath.Join(dir, "made-by-command.txt"), "new\n", 0o644)
	must(t, os.Remove(filepath.Join(dir, "plain.txt")))
	e.toolWrite(turn, "tool.txt", "by a tool\n", 0o644)
	must(t, e.rec.EndTurn(ctx, e.sess, turn))
	e.reply()

	cps, err := e.store.Checkpoints(ctx, e.sess.ID, turn)
	must(t, err)
	var kinds []string
	for _, c := range cps {
		kinds = append(kinds, c.Kind+":"+c.Unrestorable)
	}
	if strings.Join(kinds, ",") != "tree:,file:,tree_after:" {
		t.Fatalf("checkpoints %v", kinds)
	}

	rep, err := checkpoint.Undo(ctx, e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	sameTree(t, "work tree after undo", before, tree(t, dir, false))
	got := actions(rep)
	for p, a := range map[string]string{"script.sh": "restored", "notes.txt": "restored", "x.a": "restored",
		"made-by-command.txt": "deleted", "plain.txt": "restored", "tool.txt": "deleted"} {
		if got[p] != a {
			t.Errorf("%s: %q, want %q\n%s", p, got[p], a, rep.Text())
		}
	}
	if len(rep.NotCovered) != 0 {
		t.Errorf("not covered: %v", rep.NotCovered)
	}
	sameTree(t, "the user's .git", gitBefore, tree(t, filepath.Join(dir, ".git"), true))
	if ran := tr.Ran(t); len(ran) != 0 {
		t.Errorf("git ran what the configuration names: markers %v", ran)
	}
	if stash := gitCmd(t, dir, tr.Env, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "stash", "list"); !strings.Contains(stash, "stash@{0}") {
		t.Errorf("the user's stash is gone: %q", stash)
	}
}

// TestSnapshotUserEditAfterCommand: a file a command changed and the user
// changed after the turn is left alone; without a snapshot at the turn's
// end, a command's change is not overwritten either.
func TestSnapshotUserEditAfterCommand(t *testing.T) {
	tr := safegittest.NewTrap(t, false)
	useTrapEnv(t, tr)
	dir := tr.Dir
	e := newEnv(t, dir)
	ctx := t.Context()
	turn := e.prompt("run")
	must(t, e.rec.SnapshotWorkTree(ctx, e.sess, turn))
	write(t, filepath.Join(dir, "x.d"), "by the command\n", 0o644)
	write(t, filepath.Join(dir, "x.c"), "by the command\n", 0o644)
	must(t, e.rec.EndTurn(ctx, e.sess, turn))
	e.reply()
	write(t, filepath.Join(dir, "x.d"), "by the user\n", 0o644)

	rep, err := checkpoint.Undo(ctx, e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	if got := actions(rep); got["x.d"] != "skipped" || got["x.c"] != "restored" {
		t.Errorf("actions %v\n%s", got, rep.Text())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.d")); string(b) != "by the user\n" {
		t.Errorf("x.d = %q", b)
	}
}

// TestSnapshotNotGit: outside a git work tree the snapshot is recorded as
// not taken and the undo says commands' effects are not covered.
func TestSnapshotNotGit(t *testing.T) {
	e := newEnv(t, "")
	turn := e.prompt("run")
	must(t, e.rec.SnapshotWorkTree(t.Context(), e.sess, turn))
	e.toolWrite(turn, "a.txt", "x", 0o644)
	rep, err := checkpoint.Undo(t.Context(), e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	if !strings.Contains(rep.Text(), "not covered: what the commands of the turn at seq 1 changed: the working directory is not a git work tree") {
		t.Errorf("report:\n%s", rep.Text())
	}
	if actions(rep)["a.txt"] != "deleted" {
		t.Errorf("the tool's file: %v", actions(rep))
	}
}
