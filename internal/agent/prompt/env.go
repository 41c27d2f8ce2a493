package prompt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/internal/safegit"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Env is what the model is told about where it works. It is probed once
// per session (Probe) and kept: a prompt that changed with every git
// status would never be a cached prefix.
type Env struct {
	Date  string // the day the session's prompt was first built
	OS    string // GOOS/GOARCH
	Shell string // what run_command runs commands with
	Root  string // the project root: the session directory
	Git   *Git   // nil: not inside a git repository
}

// Git describes the repository the session directory is in.
type Git struct {
	Root   string   // the repository's top directory
	Branch string   // git's branch line (e.g. "main...origin/main [ahead 1]"); "" = unknown
	Status []string // the first StatusLines lines of `git status --short`
	More   int      // status lines left out
	// Unknown says why branch and status are missing (git not installed,
	// too slow); "" when they were read.
	Unknown string
}

// GitTimeout bounds the one git command a session runs for its prompt.
const GitTimeout = 2 * time.Second

// gitOutputCap bounds what is read of git's output: a status of a huge
// dirty tree is cut, not buffered whole.
const gitOutputCap = 64 << 10

// Probe gathers the environment facts of a session in directory root. With
// status (the full tier) it runs `git status` once through safegit, bounded
// by GitTimeout, with childEnv (nil: this process's environment): nothing
// the repository's or the user's git configuration names is run.
func Probe(ctx context.Context, root string, now time.Time, status bool, childEnv []string) Env {
	e := Env{Date: now.Format("Monday 2006-01-02"), OS: runtime.GOOS + "/" + runtime.GOARCH, Shell: "sh (commands run as sh -c)", Root: root}
	top := GitRoot(root)
	if top == "" {
		return e
	}
	e.Git = &Git{Root: top}
	if status {
		e.Git.readStatus(ctx, root, childEnv)
	}
	return e
}

// GitRoot is the top of the git work tree holding dir (the nearest
// directory at or above it with a .git entry), or "".
func GitRoot(dir string) string {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

func (g *Git) readStatus(ctx context.Context, dir string, childEnv []string) {
	res, err := safegit.Cmd{Dir: dir, Env: childEnv, Timeout: GitTimeout, MaxOutput: gitOutputCap,
		Args: []string{"status", "--porcelain=v1", "--branch", "--untracked-files=normal", "--ignore-submodules=all"}}.Run(ctx)
	switch {
	case errors.Is(err, safegit.ErrTimeout):
		g.Unknown = fmt.Sprintf("git status took longer than %s", GitTimeout)
		return
	case errors.Is(err, exec.ErrNotFound):
		g.Unknown = "git is not installed"
		return
	case err != nil:
		g.Unknown = "git status failed"
		return
	}
	lines := strings.Split(strings.TrimRight(string(res.Stdout), "\n"), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "## ") {
		g.Branch = termsafe.Line(strings.TrimPrefix(lines[0], "## "))
		lines = lines[1:]
	}
	if res.Cut && len(lines) > 0 {
		lines = lines[:len(lines)-1] // the last line may be cut short
		g.More++
	}
	for _, l := range lines {
		if l == "" {
			continue
		}
		if len(g.Status) == StatusLines {
			g.More++
			continue
		}
		g.Status = append(g.Status, termsafe.Line(l))
	}
}

func (e Env) write(b *strings.Builder, t Tier) {
	fmt.Fprintf(b, "- Date: %s\n", e.Date)
	fmt.Fprintf(b, "- OS: %s; shell: %s\n", e.OS, e.Shell)
	fmt.Fprintf(b, "- Project root: %s (relative paths start here)\n", e.Root)
	g := e.Git
	switch {
	case g == nil:
		b.WriteString("- Git: not a git repository\n")
		return
	case g.Root == e.Root:
		b.WriteString("- Git: a git repository\n")
	default:
		fmt.Fprintf(b, "- Git: inside the git repository at %s\n", g.Root)
	}
	if t != Full {
		return
	}
	if g.Unknown != "" {
		fmt.Fprintf(b, "- Git status: unknown (%s)\n", g.Unknown)
		return
	}
	if g.Branch != "" {
		fmt.Fprintf(b, "- Branch: %s\n", g.Branch)
	}
	switch {
	case len(g.Status) == 0:
		b.WriteString("- Git status at session start: clean\n")
	default:
		more := ""
		if g.More > 0 {
			more = fmt.Sprintf(", %d more not shown", g.More)
		}
		fmt.Fprintf(b, "- Git status at session start (may be out of date%s):\n", more)
		for _, l := range g.Status {
			fmt.Fprintf(b, "    %s\n", l)
		}
	}
}
