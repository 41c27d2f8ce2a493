package checkpoint_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// env is a session in a real SQLite file, its cwd a temporary directory.
type env struct {
	t      testing.TB
	dbPath string
	store  *sqlite.Store
	sess   *persistence.Session
	rec    *checkpoint.Recorder
	trees  string
}

func newEnv(t testing.TB, cwd string) *env {
	t.Helper()
	base := t.TempDir()
	if cwd == "" {
		cwd = filepath.Join(base, "work")
		must(t, os.MkdirAll(cwd, 0o755))
	}
	e := &env{t: t, dbPath: filepath.Join(base, "crow.db"), trees: filepath.Join(base, "trees")}
	e.open()
	e.sess = &persistence.Session{ID: "s1", Cwd: cwd}
	must(t, e.store.CreateSession(t.Context(), e.sess))
	return e
}

// open (re)opens the store, as a new process would.
func (e *env) open() {
	e.t.Helper()
	if e.store != nil {
		must(e.t, e.store.Close())
	}
	s, err := sqlite.Open(context.Background(), e.dbPath)
	must(e.t, err)
	e.store = s
	e.t.Cleanup(func() { _ = s.Close() })
	e.rec = &checkpoint.Recorder{Store: s, Trees: e.trees}
}

func (e *env) path(name string) string { return filepath.Join(e.sess.Cwd, name) }

// prompt stores a prompt and a reply and returns the turn (the prompt's seq).
func (e *env) prompt(text string) int64 {
	e.t.Helper()
	u := &persistence.Message{Role: persistence.RoleUser, Content: text, Status: persistence.StatusComplete}
	must(e.t, e.store.AppendMessages(e.t.Context(), e.sess.ID, u))
	return u.Seq
}

func (e *env) reply() {
	e.t.Helper()
	must(e.t, e.store.AppendMessages(e.t.Context(), e.sess.ID, &persistence.Message{Role: persistence.RoleAssistant, Content: "done", Status: persistence.StatusComplete}))
}

// toolWrite is a tool's write of name: checkpoint, write, record after.
func (e *env) toolWrite(turn int64, name, text string, mode os.FileMode) {
	e.t.Helper()
	ctx := e.t.Context()
	must(e.t, e.rec.BeforeChange(ctx, e.sess, turn, e.path(name)))
	must(e.t, os.MkdirAll(filepath.Dir(e.path(name)), 0o755))
	must(e.t, os.WriteFile(e.path(name), []byte(text), mode))
	must(e.t, os.Chmod(e.path(name), mode))
	must(e.t, e.rec.AfterChange(ctx, e.sess, turn, e.path(name)))
}

func (e *env) toolRemove(turn int64, name string) {
	e.t.Helper()
	must(e.t, e.rec.BeforeChange(e.t.Context(), e.sess, turn, e.path(name)))
	must(e.t, os.Remove(e.path(name)))
	must(e.t, e.rec.AfterChange(e.t.Context(), e.sess, turn, e.path(name)))
}

func (e *env) opts() checkpoint.Options { return checkpoint.Options{Trees: e.trees} }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t testing.TB, p, text string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(text), mode))
	must(t, os.Chmod(p, mode))
}

// tree is every file under dir (not .git's unless withGit), its mode and
// bytes, or for a link its target.
func tree(t testing.TB, dir string, withGit bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if d.Name() == ".git" && !withGit && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out[rel] = "link -> " + target
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = fi.Mode().String() + " " + hex.EncodeToString(sum[:8]) + " " + firstBytes(b)
		return nil
	}))
	return out
}

func firstBytes(b []byte) string {
	if len(b) > 24 {
		b = b[:24]
	}
	return string(b)
}

func sameTree(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s (%q) should not exist", what, k, v)
		}
	}
}

func actions(rep *checkpoint.Report) map[string]string {
	out := map[string]string{}
	for _, f := range rep.Files {
		out[f.Path] = f.Action
	}
	return out
}

func activeSeqs(t *testing.T, s persistence.Store, id string) []int64 {
	t.Helper()
	msgs, err := s.Messages(t.Context(), id, persistence.MessageFilter{ActiveOnly: true})
	must(t, err)
	var out []int64
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}

// TestUndoToolChanges: an edit, a new file, a deletion, a move and a mode
// change in one turn, then a second turn's edit, are undone to the exact
// bytes and modes, and the turns' messages leave the context.
func TestUndoToolChanges(t *testing.T) {
	e := newEnv(t, "")
	ctx := t.Context()
	write(t, e.path("a.txt"), "alpha\n", 0o644)
	write(t, e.path("old/name.txt"), "moved bytes\x00\xff\n", 0o600)
	write(t, e.path("gone.sh"), "#!/bin/sh\necho gone\n", 0o755)
	write(t, e.path("keep.txt"), "untouched\n", 0o640)
	first := e.prompt("setup")
	e.reply()
	before := tree(t, e.sess.Cwd, false)

	turn := e.prompt("change things")
	e.toolWrite(turn, "a.txt", "alpha edited\n", 0o644)
	e.toolWrite(turn, "a.txt", "alpha edited twice\n", 0o644) // the first checkpoint wins
	e.toolWrite(turn, "dir/new.txt", "brand new\n", 0o644)
	e.toolRemove(turn, "gone.sh")
	// A move: both paths checkpointed first.
	must(t, e.rec.BeforeChange(ctx, e.sess, turn, e.path("old/name.txt")))
	must(t, e.rec.BeforeChange(ctx, e.sess, turn, e.path("new/name.txt")))
	must(t, os.MkdirAll(e.path("new"), 0o755))
	must(t, os.Rename(e.path("old/name.txt"), e.path("new/name.txt")))
	must(t, e.rec.AfterChange(ctx, e.sess, turn, e.path("old/name.txt")))
	must(t, e.rec.AfterChange(ctx, e.sess, turn, e.path("new/name.txt")))
	e.reply()
	turn2 := e.prompt("more")
	e.toolWrite(turn2, "a.txt", "third\n", 0o755)
	e.reply()

	dry, err := checkpoint.Undo(ctx, e.store, e.sess.ID, turn, checkpoint.Options{Trees: e.trees, DryRun: true})
	must(t, err)
	if got := tree(t, e.sess.Cwd, false); got["a.txt"] == before["a.txt"] {
		t.Fatal("the dry run changed a.txt")
	}
	if !strings.Contains(dry.Text(), "would be restored a.txt") {
		t.Errorf("dry run report:\n%s", dry.Text())
	}

	rep, err := checkpoint.Undo(ctx, e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	want := map[string]string{"a.txt": "restored", "dir/new.txt": "deleted", "gone.sh": "restored",
		"old/name.txt": "restored", "new/name.txt": "deleted"}
	if got := actions(rep); !mapsEqual(got, want) {
		t.Errorf("actions %v, want %v\n%s", got, want, rep.Text())
	}
	got := tree(t, e.sess.Cwd, false)
	sameTree(t, "after undo", before, got)
	if seqs := activeSeqs(t, e.store, e.sess.ID); !slices.Equal(seqs, []int64{first, first + 1}) {
		t.Errorf("active seqs after undo %v, want the first turn only", seqs)
	}
	for _, l := range []string{"restored a.txt", "deleted dir/new.txt", "restored gone.sh"} {
		if !strings.Contains(rep.Text(), l) {
			t.Errorf("report lacks %q:\n%s", l, rep.Text())
		}
	}
	// Redo puts back what the undo found, and the messages.
	afterTurns := map[string]string{}
	_ = afterTurns
	red, err := checkpoint.Redo(ctx, e.store, e.sess.ID, e.opts())
	must(t, err)
	if b, _ := os.ReadFile(e.path("a.txt")); string(b) != "third\n" {
		t.Errorf("after redo a.txt = %q\n%s", b, red.Text())
	}
	if fi, err := os.Stat(e.path("a.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("after redo a.txt mode %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(e.path("gone.sh")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("redo left gone.sh: %v", err)
	}
	if b, _ := os.ReadFile(e.path("new/name.txt")); string(b) != "moved bytes\x00\xff\n" {
		t.Errorf("after redo new/name.txt = %q", b)
	}
	if seqs := activeSeqs(t, e.store, e.sess.ID); len(seqs) != 6 {
		t.Errorf("after redo active seqs %v", seqs)
	}
	if _, err := checkpoint.Redo(ctx, e.store, e.sess.ID, e.opts()); !errors.Is(err, checkpoint.ErrNothingToRedo) {
		t.Errorf("second redo: %v, want ErrNothingToRedo", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestUndoLeavesUserEdits: a file the user changed after the agent wrote
// it is reported with a diff and left alone; --force restores it.
func TestUndoLeavesUserEdits(t *testing.T) {
	e := newEnv(t, "")
	ctx := t.Context()
	write(t, e.path("mine.txt"), "one\ntwo\nthree\n", 0o644)
	write(t, e.path("other.txt"), "other\n", 0o644)
	turn := e.prompt("edit")
	e.toolWrite(turn, "mine.txt", "one\nTWO\nthree\n", 0o644)
	e.toolWrite(turn, "other.txt", "other by agent\n", 0o644)
	e.reply()
	write(t, e.path("mine.txt"), "one\nTWO\nthree\nthe user's line \x1b[2J\n", 0o644)

	rep, err := checkpoint.Undo(ctx, e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	if got := actions(rep); got["mine.txt"] != "skipped" || got["other.txt"] != "restored" {
		t.Fatalf("actions %v\n%s", got, rep.Text())
	}
	if b, _ := os.ReadFile(e.path("mine.txt")); !strings.Contains(string(b), "the user's line") {
		t.Errorf("the user's edit was overwritten: %q", b)
	}
	if b, _ := os.ReadFile(e.path("other.txt")); string(b) != "other\n" {
		t.Errorf("other.txt = %q", b)
	}
	text := rep.Text()
	if !strings.Contains(text, "skipped mine.txt: changed since the agent wrote it") || !strings.Contains(text, "-the user's line ^[[2J") ||
		!strings.Contains(text, "-TWO") || !strings.Contains(text, "+two") || strings.Contains(text, "\x1b") {
		t.Errorf("report:\n%s", text)
	}

	// Forced (a redo first, so that the turn is there to undo again).
	_, err = checkpoint.Redo(ctx, e.store, e.sess.ID, e.opts())
	must(t, err)
	rep, err = checkpoint.Undo(ctx, e.store, e.sess.ID, turn, checkpoint.Options{Trees: e.trees, Force: true})
	must(t, err)
	if b, _ := os.ReadFile(e.path("mine.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("forced: mine.txt = %q\n%s", b, rep.Text())
	}
}

// TestUndoAfterRestart: the store reopened between the turn and the undo
// (a new process) changes nothing.
func TestUndoAfterRestart(t *testing.T) {
	e := newEnv(t, "")
	write(t, e.path("f.txt"), "before\n", 0o600)
	turn := e.prompt("edit")
	e.toolWrite(turn, "f.txt", "after\n", 0o644)
	e.toolWrite(turn, "created.txt", "new\n", 0o644)
	e.reply()
	e.open()
	rep, err := checkpoint.Undo(t.Context(), e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	b, _ := os.ReadFile(e.path("f.txt"))
	fi, _ := os.Stat(e.path("f.txt"))
	if string(b) != "before\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("f.txt = %q %v\n%s", b, fi.Mode(), rep.Text())
	}
	if _, err := os.Stat(e.path("created.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("created.txt was not deleted: %v", err)
	}
}

// TestCheckpointLimits: a file over the per-file limit is written all the
// same and named as not restorable by the undo.
func TestCheckpointLimits(t *testing.T) {
	e := newEnv(t, "")
	e.rec.Limits = persistence.CheckpointLimits{File: 16}
	write(t, e.path("big.bin"), strings.Repeat("b", 17), 0o644)
	write(t, e.path("small.txt"), "small", 0o644)
	turn := e.prompt("edit")
	e.toolWrite(turn, "big.bin", "replaced", 0o644)
	e.toolWrite(turn, "small.txt", "changed", 0o644)
	e.reply()
	if b, _ := os.ReadFile(e.path("big.bin")); string(b) != "replaced" {
		t.Fatalf("the write over the limit did not happen: %q", b)
	}
	st, err := e.store.CheckpointStats(t.Context(), e.sess.ID)
	if err != nil || st.Files != 2 || st.Bytes != 5 {
		t.Errorf("stats %+v, %v", st, err)
	}
	rep, err := checkpoint.Undo(t.Context(), e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	if got := actions(rep); got["big.bin"] != "not_covered" || got["small.txt"] != "restored" {
		t.Errorf("actions %v\n%s", got, rep.Text())
	}
	if !strings.Contains(rep.Text(), "not covered big.bin: 17 bytes, over the per-file limit of 16") {
		t.Errorf("report:\n%s", rep.Text())
	}
}

// TestPrompts: prompts are numbered as the user sees them; undone ones
// are marked.
func TestPrompts(t *testing.T) {
	e := newEnv(t, "")
	var turns []int64
	for _, p := range []string{"first", "second", "third"} {
		turns = append(turns, e.prompt(p))
		e.reply()
	}
	_, err := checkpoint.Undo(t.Context(), e.store, e.sess.ID, turns[2], e.opts())
	must(t, err)
	ps, err := checkpoint.Prompts(t.Context(), e.store, e.sess.ID)
	must(t, err)
	if len(ps) != 3 || ps[0].Number != 1 || ps[1].Turn != turns[1] || !ps[2].Undone || ps[2].Number != 0 || ps[1].Text != "second" {
		t.Errorf("Prompts = %+v", ps)
	}
	n, err := checkpoint.TurnOf(ps, 2)
	if err != nil || n != turns[1] {
		t.Errorf("TurnOf(2) = %d, %v", n, err)
	}
	if _, err := checkpoint.TurnOf(ps, 3); err == nil {
		t.Error("TurnOf an undone prompt: no error")
	}
	if last, err := checkpoint.TurnOf(ps, 0); err != nil || last != turns[1] {
		t.Errorf("TurnOf(0) = %d, %v; want the last prompt", last, err)
	}
}

func gitCmd(t testing.TB, dir string, envv []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, envv
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(bytes.TrimSpace(out))
}

// TestUndoStaysInside: a directory swapped for a link to somewhere else
// after the turn never takes undo's write out of the session's directory.
func TestUndoStaysInside(t *testing.T) {
	e := newEnv(t, "")
	outside := t.TempDir()
	write(t, e.path("sub/f.txt"), "before\n", 0o644)
	turn := e.prompt("edit")
	e.toolWrite(turn, "sub/f.txt", "agent\n", 0o644)
	e.reply()
	write(t, filepath.Join(outside, "f.txt"), "agent\n", 0o644) // what the agent left, elsewhere
	must(t, os.RemoveAll(e.path("sub")))
	must(t, os.Symlink(outside, e.path("sub")))
	rep, err := checkpoint.Undo(t.Context(), e.store, e.sess.ID, turn, checkpoint.Options{Trees: e.trees, Force: true})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "agent\n" {
		t.Errorf("undo wrote outside the session's directory: %q\n%s", b, rep.Text())
	}
	if got := actions(rep)["sub/f.txt"]; got != "skipped" || !strings.Contains(rep.Text(), "could not be written") {
		t.Errorf("action %q\n%s", got, rep.Text())
	}
}

// TestUndoAfterUndo: after the last prompt was undone and a new one ran,
// undoing further back ignores the undone turn's writes (reverted by its
// undo): nothing is taken for a change by someone else.
func TestUndoAfterUndo(t *testing.T) {
	e := newEnv(t, "")
	write(t, e.path("f.txt"), "v0\n", 0o644)
	first := e.prompt("one")
	e.toolWrite(first, "f.txt", "v1\n", 0o644)
	e.reply()
	second := e.prompt("two")
	e.toolWrite(second, "f.txt", "v2\n", 0o644)
	e.reply()
	_, err := checkpoint.Undo(t.Context(), e.store, e.sess.ID, second, e.opts())
	must(t, err)
	if b, _ := os.ReadFile(e.path("f.txt")); string(b) != "v1\n" {
		t.Fatalf("after the first undo f.txt = %q", b)
	}
	third := e.prompt("three")
	e.toolWrite(third, "g.txt", "new\n", 0o644)
	e.reply()
	rep, err := checkpoint.Undo(t.Context(), e.store, e.sess.ID, first, e.opts())
	must(t, err)
	if got := actions(rep); got["f.txt"] != "restored" || got["g.txt"] != "deleted" {
		t.Errorf("actions %v\n%s", got, rep.Text())
	}
	if b, _ := os.ReadFile(e.path("f.txt")); string(b) != "v0\n" {
		t.Errorf("f.txt = %q", b)
	}
}

// TestCwdThroughLink: the session's directory named through a link, the
// tool's path with the link resolved (as the tools pass it): the file is
// checkpointed by its path in the directory, and undone.
func TestCwdThroughLink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	must(t, os.Symlink(dir, link))
	e := newEnv(t, link)
	write(t, filepath.Join(dir, "f.txt"), "before\n", 0o644)
	turn := e.prompt("edit")
	resolvedPath := filepath.Join(dir, "f.txt")
	must(t, e.rec.BeforeChange(t.Context(), e.sess, turn, resolvedPath))
	must(t, os.WriteFile(resolvedPath, []byte("after\n"), 0o644))
	must(t, e.rec.AfterChange(t.Context(), e.sess, turn, resolvedPath))
	cps, err := e.store.Checkpoints(t.Context(), e.sess.ID, 0)
	must(t, err)
	if len(cps) != 1 || cps[0].Path != "f.txt" {
		t.Fatalf("checkpoints %+v, want f.txt", cps)
	}
	_, err = checkpoint.Undo(t.Context(), e.store, e.sess.ID, turn, e.opts())
	must(t, err)
	if b, _ := os.ReadFile(resolvedPath); string(b) != "before\n" {
		t.Errorf("f.txt = %q", b)
	}
}
