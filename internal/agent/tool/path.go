package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
)

// Path is a path named by the model, resolved against the workspace.
//
// Resolve only classifies a path (inside or not, protected or not) to decide
// what needs permission. Tools never use Abs to reach the file: every read,
// write, list and search opens Root with os.OpenRoot and walks Rel beneath it
// (access.go), so a directory swapped for a symlink after Resolve cannot lead
// the access anywhere Root does not contain.
type Path struct {
	Abs     string // absolute, cleaned, symlinks of its existing part resolved
	Display string // relative to the root it is in, or absolute when outside
	// Inside: within one of the roots and not a file with other hard links
	// (one of which may be outside). Only inside paths go without asking.
	Inside bool
	// Root is the directory the file is reached from: the workspace root
	// Abs is in, or "/" for a path outside every root. Rel is Abs below
	// Root ("." for Root itself), in slash form, free of symlinks when
	// Resolve ran.
	Root, Rel string
	// Protected: under a .git directory, a git directory's marker
	// (gitMarker) or one of crow-acp's own files (Env.Protected); writing
	// it always asks, except in bypass mode. Why says why.
	Protected bool
	// Own: one of crow-acp's own files (configuration, credentials,
	// database, log); reading or searching it always asks too, and a
	// directory walk (search) skips it.
	Own bool
	Why string
	// HardLinked: an existing regular file with more than one hard link.
	HardLinked bool
	// own are crow-acp's own files (Env.Protected), for walks below this
	// path to skip.
	own []string
	// Client is the path as the client names it: below the root it sent
	// (a root reached through a symlink stays unresolved), "" outside
	// every root. Clients serve fs/* and follow locations only within
	// their roots, matched by prefix (Zed); see ClientPath.
	Client string
}

// ClientPath is the path to show the client (locations, diffs): in its
// own terms when the path is in one of its roots, else the real path.
func (p Path) ClientPath() string {
	if p.Client != "" {
		return p.Client
	}
	return p.Abs
}

// ClientRoots returns roots as the client named them, cleaned, index for
// index with ResolveRoots(roots).
func ClientRoots(roots []string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if r != "" && filepath.IsAbs(r) {
			out = append(out, filepath.Clean(r))
		}
	}
	return out
}

// ResolveRoots makes roots absolute and resolves their symlinks, so that
// containment checks compare real paths.
func ResolveRoots(roots []string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		real, err := realPath(filepath.Clean(r))
		if err != nil {
			real = filepath.Clean(r) // as the client named it; paths are checked against it
		}
		out = append(out, real)
	}
	return out
}

// protectedRead is why reading p is asked about every time (one of
// crow-acp's own files: the credentials file holds API keys), or "".
func protectedRead(p Path) string {
	if !p.Own {
		return ""
	}
	return p.Why
}

// ownFile reports whether abs is one of files or, for a SQLite database,
// one of its -wal, -shm and -journal files.
func ownFile(files []string, abs string) bool {
	for _, p := range files {
		if p == "" {
			continue
		}
		if abs == p || (strings.HasPrefix(abs, p+"-") && !strings.ContainsRune(abs[len(p):], filepath.Separator)) {
			return true
		}
	}
	return false
}

// Git takes any directory holding HEAD, objects/ and refs/ for a
// repository (bare, or a worktree's git directory with commondir), without
// a .git anywhere in its path, and runs what its config names
// (core.fsmonitor, core.pager, hooks) on the next git command run in or
// below it. gitMarker says why a write to abs would create or change such a
// marker, or "". The rule holds whatever order the markers are written in,
// since HEAD (without which git sees no repository) always asks:
//   - HEAD, commondir, gitdir and packed-refs always ask: no project file
//     has those names by chance;
//   - config asks when its directory already holds HEAD, commondir,
//     objects/ or refs/;
//   - anything under objects/ or refs/ asks when the directory holding
//     that folder also holds HEAD, commondir or the other folder.
//
// So a project's own config file, or an objects/ folder of source code,
// goes without a question.
func gitMarker(abs, display string) string {
	dir, base := filepath.Split(abs)
	dir = filepath.Clean(dir)
	for _, m := range []string{"HEAD", "commondir", "gitdir", "packed-refs"} {
		if strings.EqualFold(base, m) {
			return markerWhy(display, base)
		}
	}
	if strings.EqualFold(base, "config") && gitDirLike(dir, "") {
		return markerWhy(display, base)
	}
	for d := dir; ; {
		parent, name := filepath.Dir(d), filepath.Base(d)
		if parent == d {
			return ""
		}
		if (strings.EqualFold(name, "objects") || strings.EqualFold(name, "refs")) && gitDirLike(parent, strings.ToLower(name)) {
			return markerWhy(display, name+"/")
		}
		d = parent
	}
}

// gitDirLike reports whether dir already holds a git directory's marker
// other than the folder except: HEAD, commondir, objects/ or refs/.
func gitDirLike(dir, except string) bool {
	if exists(filepath.Join(dir, "HEAD")) || exists(filepath.Join(dir, "commondir")) {
		return true
	}
	for _, sub := range []string{"objects", "refs"} {
		if sub == except {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, sub)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func markerWhy(display, marker string) string {
	return fmt.Sprintf("%s is a git repository marker (%s): a folder holding HEAD, config, objects/ and refs/ is a repository, and its config can run any command on the next git command there (core.fsmonitor).", display, marker)
}

// within reports whether p is root or below it, and p relative to root.
func within(root, p string) (string, bool) {
	if p == root {
		return "", true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if strings.HasPrefix(p, prefix) {
		return p[len(prefix):], true
	}
	return "", false
}

// realPath resolves the symlinks of the longest existing prefix of p and
// appends the rest (a file about to be created has no real path yet). It
// fails when a link cannot be followed for another reason than a missing
// file.
func realPath(p string) (string, error) { return realPathDepth(p, 0) }

// maxLinks bounds the symlinks followed in one path, as the kernel does.
const maxLinks = 40

func realPathDepth(p string, depth int) (string, error) {
	var rest []string
	cur := p
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		} else if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
			return "", err
		}
		// A symlink whose target does not exist yet: writing through it
		// creates the target, so the path is where the target is (a
		// planted link to a file outside must not count as inside).
		if fi, err := os.Lstat(cur); err == nil && fi.Mode()&fs.ModeSymlink != 0 && depth < maxLinks {
			if target, err := os.Readlink(cur); err == nil {
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(cur), target)
				}
				return realPathDepth(filepath.Join(append([]string{target}, rest...)...), depth+1)
			}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// outside returns the paths of ps that are outside the workspace.
func outside(ps ...Path) []string {
	var out []string
	for _, p := range ps {
		if !p.Inside {
			out = append(out, p.Abs)
		}
	}
	return out
}

// locate is the tool-call location of p (line 0: none).
func locate(p Path, line int) []acp.ToolCallLocation {
	l := acp.ToolCallLocation{Path: p.ClientPath()}
	if line > 0 {
		l.Line = &line
	}
	return []acp.ToolCallLocation{l}
}
