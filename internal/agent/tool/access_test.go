//go:build unix

package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// swapWorkspace is a root with sub/f.txt inside and, next to it, an outside
// directory holding a file of the same name and content plus a secret.
func swapWorkspace(t *testing.T) (env *Env, root, out string) {
	t.Helper()
	root, out = workspace(t)
	for _, f := range []string{filepath.Join(root, "sub", "f.txt"), filepath.Join(out, "f.txt")} {
		if err := os.WriteFile(f, []byte("same\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("TOPSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Env{Roots: ResolveRoots([]string{root})}, root, out
}

// swapDir replaces the directory dir with a symlink to target, as a
// concurrent process could between a call's Prepare and its Run.
func swapDir(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

func prepareCall(t *testing.T, tl Tool, env *Env, args any) *Action {
	t.Helper()
	raw, _ := json.Marshal(args)
	act, err := tl.Prepare(env, raw)
	if err != nil {
		t.Fatalf("Prepare %v: %v", args, err)
	}
	return act
}

// Issue 13 case 2: a path resolved inside, whose directory is swapped for a
// symlink to outside before the call runs, must not be read or written
// outside. Reads run without asking in default and plan mode; writes in
// accept_edits and bypass, or after the user approved a diff shown inside.
func TestSwapAfterResolveStaysInside(t *testing.T) {
	ctx := context.Background()
	for _, target := range []string{"abs", "rel"} {
		t.Run("read/"+target, func(t *testing.T) {
			env, root, out := swapWorkspace(t)
			act := prepareCall(t, readFile{}, env, map[string]any{"path": "sub/secret"})
			if len(act.Outside) != 0 {
				t.Fatalf("sub/secret called outside before the swap: %v", act.Outside)
			}
			swapDir(t, filepath.Join(root, "sub"), linkTarget(out, target))
			if r := act.Run(ctx, nil); strings.Contains(r.Output, "TOPSECRET") || !r.Failed {
				t.Fatalf("the read followed the swapped directory outside: %+v", r)
			}
		})
		t.Run("search/"+target, func(t *testing.T) {
			env, root, out := swapWorkspace(t)
			act := prepareCall(t, search{}, env, map[string]any{"pattern": "TOPSECRET", "path": "sub"})
			swapDir(t, filepath.Join(root, "sub"), linkTarget(out, target))
			if r := act.Run(ctx, nil); strings.Contains(r.Output, "TOPSECRET") {
				t.Fatalf("the search followed the swapped directory outside: %+v", r)
			}
		})
		t.Run("list/"+target, func(t *testing.T) {
			env, root, out := swapWorkspace(t)
			act := prepareCall(t, listFiles{}, env, map[string]any{"path": "sub"})
			swapDir(t, filepath.Join(root, "sub"), linkTarget(out, target))
			if r := act.Run(ctx, nil); strings.Contains(r.Output, "secret") {
				t.Fatalf("the listing followed the swapped directory outside: %+v", r)
			}
		})
		t.Run("write/"+target, func(t *testing.T) {
			env, root, out := swapWorkspace(t)
			act := prepareCall(t, writeFile{}, env, map[string]any{"path": "sub/new.txt", "content": "x"})
			swapDir(t, filepath.Join(root, "sub"), linkTarget(out, target))
			act.Run(ctx, nil)
			if _, err := os.Lstat(filepath.Join(out, "new.txt")); err == nil {
				t.Fatal("the write created a file outside through the swapped directory")
			}
		})
		t.Run("approved-edit/"+target, func(t *testing.T) {
			env, root, out := swapWorkspace(t)
			act := prepareCall(t, editFile{}, env, map[string]any{"path": "sub/f.txt", "old": "same", "new": "changed"})
			if _, err := act.Preview(ctx); err != nil { // the diff the user approves
				t.Fatal(err)
			}
			swapDir(t, filepath.Join(root, "sub"), linkTarget(out, target))
			act.Run(ctx, nil)
			if b, _ := os.ReadFile(filepath.Join(out, "f.txt")); string(b) != "same\n" {
				t.Fatalf("the approved edit was written outside: %q", b)
			}
		})
	}
}

func linkTarget(out, kind string) string {
	if kind == "abs" {
		return out
	}
	return filepath.Join("..", filepath.Base(out))
}

// Issue 13 case 2, within one access: the file checked and the file opened
// must be the same; a swap in between (the test hook runs exactly there)
// is refused instead of read.
func TestSwapBetweenCheckAndOpen(t *testing.T) {
	env, root, out := swapWorkspace(t)
	act := prepareCall(t, readFile{}, env, map[string]any{"path": "sub/f.txt"})
	testHookOpened = func(string) {
		f := filepath.Join(root, "sub", "f.txt")
		if err := os.Rename(f, f+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(out, "secret"), f); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { testHookOpened = nil }()
	if r := act.Run(context.Background(), nil); strings.Contains(r.Output, "TOPSECRET") || !r.Failed {
		t.Fatalf("a file swapped between check and open was read: %+v", r)
	}
}

// Issue 13 case 3: a hard link inside the workspace to a file outside is
// outside: reading it asks, writing it asks in accept_edits and bypass
// (Outside is never skipped), a search of the workspace skips it, and a
// link made after the call was prepared is refused when it runs.
func TestHardLinkIsOutside(t *testing.T) {
	env, root, out := swapWorkspace(t)
	hard := filepath.Join(root, "hard")
	if err := os.Link(filepath.Join(out, "secret"), hard); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool Tool
		args any
	}{
		{readFile{}, map[string]any{"path": "hard"}},
		{writeFile{}, map[string]any{"path": "hard", "content": "overwritten"}},
		{editFile{}, map[string]any{"path": "hard", "old": "TOP", "new": "NOT"}},
	} {
		if act := prepareCall(t, c.tool, env, c.args); len(act.Outside) == 0 {
			t.Errorf("%T %v: a hard link to an outside file runs without asking", c.tool, c.args)
		}
	}
	act := prepareCall(t, search{}, env, map[string]any{"pattern": "TOPSECRET"})
	if r := act.Run(context.Background(), nil); strings.Contains(r.Output, "TOPSECRET") {
		t.Fatalf("searching the workspace read a hard-linked outside file:\n%s", r.Output)
	}
	// Approved or not, a write replaces the name: the outside file keeps
	// its content.
	w := prepareCall(t, writeFile{}, env, map[string]any{"path": "hard", "content": "overwritten"})
	w.Run(context.Background(), nil)
	if b, _ := os.ReadFile(filepath.Join(out, "secret")); string(b) != "TOPSECRET\n" {
		t.Fatalf("the write went through the hard link to the outside file: %q", b)
	}
	// Linked after Prepare.
	rd := prepareCall(t, readFile{}, env, map[string]any{"path": "sub/f.txt"})
	f := filepath.Join(root, "sub", "f.txt")
	_ = os.Remove(f)
	if err := os.Link(filepath.Join(out, "secret"), f); err != nil {
		t.Fatal(err)
	}
	if r := rd.Run(context.Background(), nil); strings.Contains(r.Output, "TOPSECRET") {
		t.Fatalf("a file hard-linked after Prepare was read: %+v", r)
	}
}

// Issue 13 case 4: writes under .git/ (and crow-acp's own files) must be
// asked about every time.
func TestProtectedWritesAlwaysAsk(t *testing.T) {
	env, root, _ := swapWorkspace(t)
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(root, "crow.db")
	env.Protected = ResolveRoots([]string{db})
	for _, p := range []string{".git/config", ".git/hooks/pre-commit", "sub/../.git/config", "x/.GIT/config", "crow.db", "crow.db-wal"} {
		if act := prepareCall(t, writeFile{}, env, map[string]any{"path": p, "content": "x"}); act.AlwaysAsk == "" {
			t.Errorf("write %s: not asked every time", p)
		}
	}
	for _, p := range []string{"a.go", "sub/gitconfig", ".gitignore", "crow.dbx/y"} {
		if act := prepareCall(t, writeFile{}, env, map[string]any{"path": p, "content": "x"}); act.AlwaysAsk != "" {
			t.Errorf("write %s: protected (%s)", p, act.AlwaysAsk)
		}
	}
}

// Issue 14 item 3: a FIFO (with or without a writer), a socket or a device
// is refused at once, never read: a FIFO without a writer would block the
// turn, one with an endless writer would grow memory without bound.
func TestNonRegularFilesRefused(t *testing.T) {
	env, root, _ := swapWorkspace(t)
	fifo := filepath.Join(root, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	writerFifo := filepath.Join(root, "pipe2")
	if err := syscall.Mkfifo(writerFifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A writer that never stops (held open read-write so it never blocks).
	w, err := os.OpenFile(writerFifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go func() {
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}()
	env.Roots = append(env.Roots, "/dev")
	cases := []map[string]any{
		{"path": "pipe"}, {"path": "pipe2"}, {"path": "/dev/zero"}, {"path": "/dev/null"},
	}
	for _, args := range cases {
		done := make(chan Result, 1)
		act := prepareCall(t, readFile{}, env, args)
		go func() { done <- act.Run(context.Background(), nil) }()
		select {
		case r := <-done:
			if !r.Failed || !strings.Contains(r.Output, "not a regular file") {
				t.Errorf("read %v: %+v", args["path"], r)
			}
		case <-time.After(10 * time.Second): // a hang, not a measurement
			t.Fatalf("read %v blocked", args["path"])
		}
	}
	// Through the client as well: it is never asked to read a FIFO.
	env.ClientRead = true
	env.Client = nil
	if _, err := statRegular(mustResolve(t, env, "pipe")); err == nil {
		t.Error("a FIFO passed the check made before the client is asked")
	}
	// A write does not open a FIFO (it would block or feed a reader).
	wr := prepareCall(t, writeFile{}, env, map[string]any{"path": "pipe", "content": "x"})
	if r := wr.Run(context.Background(), nil); !r.Failed {
		t.Errorf("a write over a FIFO: %+v", r)
	}
}

func mustResolve(t *testing.T, env *Env, p string) Path {
	t.Helper()
	got, err := env.Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Writes go through a temporary file renamed over the target: the mode is
// kept and no temporary file is left behind.
func TestWriteKeepsModeLeavesNoTemp(t *testing.T) {
	env, root, _ := swapWorkspace(t)
	f := filepath.Join(root, "sub", "f.txt")
	if err := os.Chmod(f, 0o751); err != nil {
		t.Fatal(err)
	}
	if r := prepareCall(t, writeFile{}, env, map[string]any{"path": "sub/f.txt", "content": "new"}).Run(context.Background(), nil); r.Failed {
		t.Fatal(r.Output)
	}
	fi, err := os.Stat(f)
	if err != nil || fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode after write: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "sub"))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}
