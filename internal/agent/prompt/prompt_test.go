package prompt

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/internal/safegit/safegittest"
)

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func paths(ins []Instruction) string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Path)
	}
	return strings.Join(out, ",")
}

func TestTierFor(t *testing.T) {
	for window, want := range map[int]Tier{1024: Minimal, 4095: Minimal, 4096: Compact, 6000: Compact, 32767: Compact, 32768: Full, 200000: Full, 0: Full} {
		if got := TierFor(window); got != want {
			t.Errorf("window %d: %s, want %s", window, got, want)
		}
	}
}

// The names in order of preference, the root-only Copilot file, and the
// walk from the repository root down to the session directory.
func TestLoaderInitial(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, ".github", "copilot-instructions.md"), "copilot")
	write(t, filepath.Join(root, "a", "CRUSH.md"), "crush")
	write(t, filepath.Join(root, "a", "b", "GEMINI.md"), "gemini")
	write(t, filepath.Join(root, "a", "b", "CRUSH.md"), "not read")
	write(t, filepath.Join(root, "a", "b", ".github", "copilot-instructions.md"), "not at the root: not read")
	write(t, filepath.Join(root, "a", "b", "c", "AGENTS.md"), "below the session: later")
	l := NewLoader(filepath.Join(root, "a", "b"), 1<<10)
	got := l.Initial()
	if p := paths(got); p != ".github/copilot-instructions.md,a/CRUSH.md,a/b/GEMINI.md" {
		t.Fatalf("loaded %s", p)
	}
	if got[2].Text != "gemini" {
		t.Errorf("text %q", got[2].Text)
	}
	if again := l.Initial(); len(again) != 0 {
		t.Errorf("loaded twice: %s", paths(again))
	}
	// A nested one: once, for a file or a folder below the session
	// directory; nothing for paths outside it.
	for _, p := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), "/etc/passwd", "../../x", ""} {
		if got := l.Nested(p); len(got) != 0 {
			t.Errorf("Nested(%q) loaded %s", p, paths(got))
		}
	}
	if got := l.Nested("c/x.go"); paths(got) != "a/b/c/AGENTS.md" {
		t.Errorf("Nested(c/x.go) loaded %q", paths(got))
	}
	if got := l.Nested(filepath.Join(root, "a", "b", "c")); len(got) != 0 {
		t.Errorf("loaded again: %s", paths(got))
	}
}

// A link out of the root is never followed; one inside it is.
func TestLoaderSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "AGENTS.md"), "SECRET")
	write(t, filepath.Join(root, "docs", "rules.md"), "inside")
	if err := os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(root, "AGENTS.md")); err != nil {
		t.Skip(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../docs/rules.md", filepath.Join(root, "sub", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	l := NewLoader(root, 1<<10)
	if got := l.Initial(); len(got) != 0 {
		t.Fatalf("followed a link out of the root: %+v", got)
	}
	if got := l.Nested("out/x.go"); len(got) != 0 {
		t.Fatalf("followed a linked folder out of the root: %+v", got)
	}
	if got := l.Nested("sub/x.go"); len(got) != 1 || got[0].Text != "inside" {
		t.Fatalf("a link inside the root: %+v", got)
	}
}

// One budget for all files of a session: cut at a character boundary,
// then named but not loaded.
func TestLoaderBudget(t *testing.T) {
	cwd := t.TempDir()
	write(t, filepath.Join(cwd, "AGENTS.md"), strings.Repeat("é", 10)) // 20 bytes
	write(t, filepath.Join(cwd, "x", "AGENTS.md"), "more")
	l := NewLoader(cwd, 7) // 7: the cut falls inside the 4th "é"
	got := l.Initial()
	if len(got) != 1 || got[0].Text != "ééé" || !got[0].Truncated || got[0].Size != 20 {
		t.Fatalf("%+v", got)
	}
	if s := got[0].Section(); !strings.Contains(s, "[truncated: 6 of 20 bytes shown; read AGENTS.md for the rest]") {
		t.Errorf("section %q", s)
	}
	if next := l.Nested("x"); len(next) != 1 || next[0].Text != "m" || !next[0].Truncated {
		t.Fatalf("the byte left: %+v", next)
	}
	write(t, filepath.Join(cwd, "y", "AGENTS.md"), "more")
	next := l.Nested("y")
	if len(next) != 1 || !next[0].Omitted || !strings.Contains(next[0].Section(), "Instructions in y/AGENTS.md were not loaded") {
		t.Fatalf("%+v", next)
	}
	// A restarted session reads the nested file again and marks it seen.
	l = NewLoader(cwd, 100)
	l.Initial()
	if got := l.Reload([]string{"x/AGENTS.md", "../escape/AGENTS.md", "AGENTS.md"}); paths(got) != "x/AGENTS.md" {
		t.Fatalf("reloaded %q", paths(got))
	}
	if got := l.Nested("x/y.go"); len(got) != 0 {
		t.Fatalf("loaded again after a reload: %+v", got)
	}
}

// The full tier's git facts: branch, status capped, control characters
// of file names dropped; git runs once per Probe.
func TestProbeGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "-b", "main", dir).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	for i := range StatusLines + 3 {
		write(t, filepath.Join(dir, "f"+strings.Repeat("x", i)), "")
	}
	sub := filepath.Join(dir, "sub")
	write(t, filepath.Join(sub, "a\x1b[31mb"), "")
	e := Probe(context.Background(), sub, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), true, nil)
	if e.Date != "Monday 2026-01-05" || e.Root != sub || e.Git == nil || e.Git.Root != dir {
		t.Fatalf("%+v", e)
	}
	if e.Git.Branch != "No commits yet on main" || len(e.Git.Status) != StatusLines || e.Git.More != 4 {
		t.Fatalf("branch %q, %d lines, %d more: %q", e.Git.Branch, len(e.Git.Status), e.Git.More, e.Git.Status)
	}
	var b strings.Builder
	e.write(&b, Full)
	if strings.ContainsRune(b.String(), 0x1b) || !strings.Contains(b.String(), "4 more not shown") || !strings.Contains(b.String(), "inside the git repository at "+dir) {
		t.Errorf("%s", b.String())
	}
	b.Reset()
	e.write(&b, Compact)
	if strings.Contains(b.String(), "Branch") {
		t.Errorf("compact tier shows git status: %s", b.String())
	}
	if e := Probe(context.Background(), t.TempDir(), time.Now(), true, nil); e.Git != nil && GitRoot(os.TempDir()) == "" {
		t.Errorf("a directory outside any repository: %+v", e.Git)
	}
}

func TestBuildOrder(t *testing.T) {
	s := Build(Session{Tier: Compact, Base: " BASE ", Append: []string{"", "ONE", "TWO"}, Model: "m", Mode: "plan (plan). Read only.",
		Env:          Env{Date: "d", OS: "o", Shell: "sh", Root: "/r"},
		Instructions: []Instruction{{Path: "AGENTS.md", Text: "rules\n"}}})
	want := "BASE\n\nONE\n\nTWO\n\n# Environment\n- Date: d\n- OS: o; shell: sh\n- Project root: /r (relative paths start here)\n" +
		"- Git: not a git repository\n- Model: m\n- Mode: plan (plan). Read only.\n\n# Project instructions\n\nInstructions from AGENTS.md:\nrules"
	if s != want {
		t.Fatalf("got\n%s\nwant\n%s", s, want)
	}
}

// FuzzInstructionRead: whatever bytes a workspace file holds, what is kept
// is valid UTF-8 within the budget, and says when it was cut.
func FuzzInstructionRead(f *testing.F) {
	f.Add([]byte("# Rules\nrun make check\n"), 2048)
	f.Add([]byte("a\x00b\x1b[2J\xff\xfe\xc3"), 4)
	f.Add([]byte(strings.Repeat("日本語", 4000)), 2048)
	f.Add([]byte{0xe6, 0x97, 0xa5, 0xe6, 0x97}, 4)
	f.Add([]byte(strings.Repeat("x", 70000)), 16384)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, budget int) {
		if len(data) == 0 || budget < 1 || budget > 1<<16 {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got := NewLoader(dir, budget).Initial()
		if len(got) != 1 {
			t.Fatalf("%d files", len(got))
		}
		in := got[0]
		if !utf8.ValidString(in.Text) {
			t.Fatalf("invalid UTF-8 kept: %q", in.Text)
		}
		if len(data) <= budget && (in.Truncated || in.Text != strings.ToValidUTF8(string(data), "?")) {
			t.Fatalf("a file within the budget was changed: %q -> %q", data, in.Text)
		}
		if len(data) > budget && !in.Truncated {
			t.Fatalf("a file over the budget was not marked truncated")
		}
		if len(in.Text) > budget {
			t.Fatalf("kept %d bytes for a budget of %d", len(in.Text), budget)
		}
	})
}

// TestProbeRunsNoRepositoryHook: the one git command the prompt runs sees
// a repository the workspace controls, whose core.fsmonitor names a
// program; git must not start it. The user's own GIT_CONFIG_COUNT pairs
// stay in force.
func TestProbeRunsNoRepositoryHook(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "hook-ran")
	hook := filepath.Join(dir, "hook.sh")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.fsmonitor", hook}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	env := append(os.Environ(), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=status.branch", "GIT_CONFIG_VALUE_0=true")
	e := Probe(context.Background(), dir, time.Now(), true, env)
	if e.Git == nil || e.Git.Unknown != "" {
		t.Fatalf("git facts: %+v", e.Git)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's core.fsmonitor hook ran")
	}
}

// TestProbeRunsNothingTheRepositoryNames (issue 37 item 4): the prompt's git
// facts, read in a work tree whose configuration names filters (its own, an
// included file's, the user's), an fsmonitor hook, a post-index-change hook
// and a submodule's filter, start none of them and still tell the branch
// and the change.
func TestProbeRunsNothingTheRepositoryNames(t *testing.T) {
	for _, process := range []bool{false, true} {
		safegittest.CheckArmed(t, process)
		tr := safegittest.NewTrap(t, process)
		e := Probe(context.Background(), tr.Dir, time.Now(), true, tr.Env)
		if got := tr.Ran(t); len(got) != 0 {
			t.Errorf("the prompt's git status started %v", got)
		}
		if e.Git == nil || e.Git.Unknown != "" || e.Git.Branch != "main" || !slices.Contains(e.Git.Status, " M plain.txt") {
			t.Errorf("git facts: %+v", e.Git)
		}
	}
}

// TestLoaderSpecialFiles (issue 37 item 3): an instruction file that is a
// FIFO nobody writes, a link to one, a socket or a device, at the root or
// nested, is passed over without waiting (the open of a FIFO used to block
// forever), and the next name in its folder is read instead.
func TestLoaderSpecialFiles(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git", "linked", "nested/deep", "sock", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"AGENTS.md", "fifo", "nested/deep/CLAUDE.md"} {
		if err := syscall.Mkfifo(filepath.Join(root, p), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	write(t, filepath.Join(root, "CLAUDE.md"), "root rules")
	if err := os.Symlink("../fifo", filepath.Join(root, "linked", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "linked", "GEMINI.md"), "linked rules")
	t.Chdir(filepath.Join(root, "sock")) // a socket's path must be short
	ln, err := net.Listen("unix", "AGENTS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	write(t, filepath.Join(root, "sock", "CRUSH.md"), "sock rules")
	want := "CLAUDE.md,linked/GEMINI.md,sock/CRUSH.md"
	// A character device (1,3, as /dev/null) needs privileges to make.
	if err := syscall.Mknod(filepath.Join(root, "dev", "AGENTS.md"), syscall.S_IFCHR|0o644, 1<<8|3); err == nil {
		write(t, filepath.Join(root, "dev", "CLAUDE.md"), "dev rules")
		want += ",dev/CLAUDE.md"
	} else {
		t.Logf("no device node (mknod: %v): that case is not tried", err)
	}

	done := make(chan string, 1)
	go func() {
		l := NewLoader(root, 1<<10)
		got := l.Initial()
		for _, p := range []string{"linked/x.go", "nested/deep/x.go", "sock/x.go", "dev/x.go"} {
			got = append(got, l.Nested(filepath.Join(root, p))...)
		}
		done <- paths(got)
	}()
	select {
	case got := <-done:
		if got != want {
			t.Fatalf("loaded %s, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loading the instruction files blocked (the open of a FIFO nobody writes)")
	}
}
