package safegit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/safegit/safegittest"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// TestStatusRunsNothingTheRepositoryNames (issue 37 item 4): in a work tree
// whose configuration names a clean filter, a process filter, a filter in
// an included file and one in the user's configuration, an fsmonitor
// hook, a post-index-change hook and a submodule with a filter of its own,
// `git status` through safegit reads the status and starts none of them.
// Plain git, as the control, starts every one: the trap is armed.
func TestStatusRunsNothingTheRepositoryNames(t *testing.T) {
	for _, process := range []bool{false, true} {
		safegittest.CheckArmed(t, process)
		tr := safegittest.NewTrap(t, process)
		res, err := Cmd{Dir: tr.Dir, Env: tr.Env, Args: []string{"status", "--porcelain=v1", "--branch", "--ignore-submodules=all"}}.Run(context.Background())
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if got := tr.Ran(t); len(got) != 0 {
			t.Errorf("safegit's git status started %v", got)
		}
		if out := string(res.Stdout); !strings.HasPrefix(out, "## main\n") || !strings.Contains(out, " M plain.txt\n") {
			t.Errorf("status output:\n%s", out)
		}
	}
}

// git runs a plain git command for a test's setup.
func git(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestDisable: every filter, hook and protocol a configuration names gets
// its switch-off, subsections with dots and odd characters included, once
// each; other keys none.
func TestDisable(t *testing.T) {
	list := "core.bare\nfalse\x00filter.lfs.clean\ngit-lfs clean -- %f\x00filter.lfs.process\ngit-lfs\x00" +
		"filter.a.b=c.smudge\nx\x00hook.lint.command\nmake lint\x00hook.lint.event\npre-commit\x00" +
		"protocol.ext.allow\nalways\x00protocol.allow\nalways\x00filter.valueless\x00user.name\nme\x00"
	got, err := Disable([]byte(list))
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"filter.lfs.clean", ""}, {"filter.lfs.smudge", ""}, {"filter.lfs.process", ""}, {"filter.lfs.required", "false"},
		{"filter.a.b=c.clean", ""}, {"filter.a.b=c.smudge", ""}, {"filter.a.b=c.process", ""}, {"filter.a.b=c.required", "false"},
		{"hook.lint.enabled", "false"},
		{"protocol.ext.allow", "never"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Disable:\n got %q\nwant %q", got, want)
	}
	var many strings.Builder
	for i := range maxNames + 1 {
		fmt.Fprintf(&many, "filter.f%d.clean\nx\x00", i)
	}
	if _, err := Disable([]byte(many.String())); err == nil {
		t.Fatal("a configuration with too many filters was accepted")
	}
}

// The environment keeps the user's configuration choice and pairs, drops
// git's variables that point elsewhere or run programs, and sets the
// caller's extra ones.
func TestEnvironment(t *testing.T) {
	env := []string{"PATH=/bin", "GIT_DIR=/elsewhere", "GIT_EXTERNAL_DIFF=evil", "GIT_SSH_COMMAND=evil",
		"GIT_CONFIG_GLOBAL=/home/u/.gitconfig", "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=safe.directory",
		"GIT_CONFIG_VALUE_0=*", "GIT_CONFIG_KEY_1=incomplete", "GIT_CONFIG_PARAMETERS='core.fsmonitor'='x'"}
	got := withPairs(cleanEnv(env, []string{"GIT_DIR=/mine"}), append(userPairs(env), Settings[0]))
	for _, want := range []string{"PATH=/bin", "GIT_CONFIG_GLOBAL=/home/u/.gitconfig", "GIT_DIR=/mine", "GIT_OPTIONAL_LOCKS=0",
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*", "GIT_CONFIG_KEY_1=safe.bareRepository"} {
		if !slices.Contains(got, want) {
			t.Errorf("environment lacks %s: %q", want, got)
		}
	}
	for _, bad := range []string{"GIT_DIR=/elsewhere", "GIT_EXTERNAL_DIFF=evil", "GIT_SSH_COMMAND=evil", "GIT_CONFIG_PARAMETERS='core.fsmonitor'='x'"} {
		if slices.Contains(got, bad) {
			t.Errorf("environment keeps %s", bad)
		}
	}
}

// A configuration git cannot finish reading (an include naming a FIFO
// nobody writes) ends at the timeout, as an error naming it.
func TestTimeout(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	git(t, dir, nil, "init", "-q")
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	git(t, dir, nil, "config", "include.path", fifo)
	start := time.Now()
	_, err := Cmd{Dir: dir, Args: []string{"status"}, Timeout: 300 * time.Millisecond}.Run(context.Background())
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the run took %s", d)
	}
}

// Output beyond MaxOutput is cut, and said to be.
func TestMaxOutput(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	git(t, dir, nil, "init", "-q")
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%02d.txt", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Cmd{Dir: dir, Args: []string{"status", "--porcelain"}, MaxOutput: 100}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 100 || !res.Cut || !strings.HasPrefix(string(res.Stdout), "?? file-00.txt") {
		t.Fatalf("%d bytes kept, cut %v", len(res.Stdout), res.Cut)
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// FuzzDisable: whatever `git config --list` printed (a repository's
// configuration is the workspace's), Disable never panics, and every
// setting it returns is a switch-off of a filter, hook or protocol whose
// key git's environment can carry (no NUL, no newline), within the bound.
func FuzzDisable(f *testing.F) {
	f.Add([]byte("filter.lfs.clean\ngit-lfs clean\x00hook.a.command\nx\x00protocol.ext.allow\nalways\x00"))
	f.Add([]byte("filter.\x1b[2J.clean\n\x00filter.\xff\xfe.process\x00hook..event\x00protocol.allow\nalways"))
	f.Add([]byte(strings.Repeat("filter.x\x01.clean\n\x7f\x00", 2000)))
	f.Add([]byte(strings.Repeat("a", 1<<16)))
	f.Fuzz(func(t *testing.T, list []byte) {
		out, err := Disable(list)
		if err != nil {
			return
		}
		if len(out) > 4*maxNames {
			t.Fatalf("%d settings", len(out))
		}
		for _, kv := range out {
			k, v := kv[0], kv[1]
			if strings.ContainsAny(k, "\x00\n") || !bytes.Contains(list, []byte(k[:strings.LastIndexByte(k, '.')])) {
				t.Fatalf("key %q", k)
			}
			ok := strings.HasPrefix(k, "filter.") && (v == "" || strings.HasSuffix(k, ".required") && v == "false") ||
				strings.HasPrefix(k, "hook.") && strings.HasSuffix(k, ".enabled") && v == "false" ||
				strings.HasPrefix(k, "protocol.") && strings.HasSuffix(k, ".allow") && v == "never"
			if !ok {
				t.Fatalf("setting %q = %q", k, v)
			}
		}
	})
}
