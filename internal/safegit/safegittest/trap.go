// Package safegittest builds git work trees that run commands when git
// looks at them, for the tests of code that must not run them.
package safegittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Trap is a work tree whose configuration names a command for each way
// `git status` can be made to run one; each command creates a marker file
// in Markers, named after the way.
type Trap struct {
	Dir     string   // the work tree: branch main, plain.txt modified
	Markers string   // where the commands leave their markers
	Env     []string // this process's environment, HOME holding a user configuration with a filter
	Armed   []string // the markers plain `git status` creates here, sorted
}

// The ways, by marker name. A process filter that fails ends git status
// (a fatal error), so it is a trap of its own (NewTrap's process).
var (
	Markers = []string{
		"clean-filter",      // filter.<name>.clean in .git/config
		"fsmonitor",         // core.fsmonitor naming a hook
		"included-filter",   // a filter in a file an includeIf names
		"post-index-change", // .git/hooks/post-index-change after the index is refreshed
		"submodule-filter",  // a filter in a submodule's own configuration, if git looks into it
		"user-filter",       // a filter in the user's ~/.gitconfig
	}
	ProcessMarkers = []string{"process-filter"} // filter.<name>.process in .git/config
)

// NewTrap builds a trap beneath t.TempDir(): with process, only the
// process filter; else every other way.
func NewTrap(t testing.TB, process bool) *Trap {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	base := t.TempDir()
	tr := &Trap{Dir: filepath.Join(base, "work"), Markers: filepath.Join(base, "markers"), Armed: Markers}
	if process {
		tr.Armed = ProcessMarkers
	}
	home := filepath.Join(base, "home")
	for _, d := range []string{tr.Dir, tr.Markers, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	mark := func(name string) string { return "touch " + filepath.Join(tr.Markers, name) }
	// A hook or filter that fails once it has been started: git goes on
	// (the process filter keeps its pipe open until git has written its
	// handshake, so that git gets no SIGPIPE).
	script := func(name string) string {
		p := filepath.Join(base, name+".sh")
		write(t, p, "#!/bin/sh\n"+mark(name)+"\nsleep 1\nexit 1\n", 0o755)
		return p
	}

	// The files, committed before any trap is set.
	git(t, tr.Dir, tr.Env, "init", "-q", "-b", "main")
	write(t, filepath.Join(tr.Dir, ".gitattributes"), "*.a filter=evilclean\n*.b filter=evilprocess\n*.c filter=evilincluded\n*.d filter=eviluser\n", 0o644)
	for _, f := range []string{"x.a", "x.b", "x.c", "x.d", "plain.txt"} {
		write(t, filepath.Join(tr.Dir, f), "same\n", 0o644)
	}
	sub := filepath.Join(tr.Dir, "sub")
	git(t, tr.Dir, tr.Env, "init", "-q", "-b", "main", sub)
	write(t, filepath.Join(sub, ".gitattributes"), "*.s filter=evilsub\n", 0o644)
	write(t, filepath.Join(sub, "x.s"), "s\n", 0o644)
	git(t, sub, tr.Env, "add", ".")
	git(t, sub, tr.Env, "commit", "-q", "-m", "s")
	git(t, tr.Dir, tr.Env, "add", ".") // sub as a gitlink
	git(t, tr.Dir, tr.Env, "commit", "-q", "-m", "files")

	// The traps.
	cfg, err := os.OpenFile(filepath.Join(tr.Dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if process {
		fmt.Fprintf(cfg, "[filter \"evilprocess\"]\n\tprocess = %q\n", script("process-filter"))
	} else {
		extra := filepath.Join(base, "extra.config")
		write(t, extra, fmt.Sprintf("[filter \"evilincluded\"]\n\tclean = %q\n", mark("included-filter")+"; cat"), 0o644)
		write(t, filepath.Join(home, ".gitconfig"), fmt.Sprintf("[filter \"eviluser\"]\n\tclean = %q\n", mark("user-filter")+"; cat"), 0o644)
		fmt.Fprintf(cfg, "[filter \"evilclean\"]\n\tclean = %q\n", mark("clean-filter")+"; cat")
		fmt.Fprintf(cfg, "[core]\n\tfsmonitor = %q\n", script("fsmonitor"))
		fmt.Fprintf(cfg, "[includeIf \"gitdir:%s/\"]\n\tpath = %s\n", tr.Dir, extra)
		write(t, filepath.Join(tr.Dir, ".git", "hooks", "post-index-change"), "#!/bin/sh\n"+mark("post-index-change")+"\n", 0o755)
		git(t, sub, tr.Env, "config", "filter.evilsub.clean", mark("submodule-filter")+"; cat")
	}
	if err := cfg.Close(); err != nil {
		t.Fatal(err)
	}

	// Same sizes, later times: git hashes the files again, through their
	// filters, and refreshes the index.
	later := time.Now().Add(time.Hour)
	for _, f := range []string{"x.a", "x.b", "x.c", "x.d", "plain.txt", "sub/x.s"} {
		if err := os.Chtimes(filepath.Join(tr.Dir, f), later, later); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(tr.Dir, "plain.txt"), "changed\n", 0o644)
	return tr
}

// Ran lists the markers created so far, sorted.
func (tr *Trap) Ran(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir(tr.Markers)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// CheckArmed runs plain `git status` in a trap built like tr and fails the
// test unless every marker of tr appears: a test that finds no marker
// after its own run then proves something.
func CheckArmed(t testing.TB, process bool) {
	t.Helper()
	control := NewTrap(t, process)
	cmd := exec.Command("git", "status", "--porcelain=v1")
	cmd.Dir, cmd.Env = control.Dir, control.Env
	_ = cmd.Run() // the process filter's failure is fatal to it
	if got := control.Ran(t); !slices.Equal(got, control.Armed) {
		t.Fatalf("plain git status started %v, want every trap %v", got, control.Armed)
	}
}

// git runs a plain git command of a trap's setup.
func git(t testing.TB, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t testing.TB, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}
