package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/safegit"
)

// TreeLimits bound a work-tree snapshot; zero values are the defaults.
type TreeLimits struct {
	Timeout  time.Duration // the whole snapshot (default 30s)
	MaxBytes int64         // of the files it would keep (default 256 MiB)
	MaxFiles int           // default 50,000
}

func (l TreeLimits) orDefaults() TreeLimits {
	l.Timeout = cmp.Or(l.Timeout, 30*time.Second)
	l.MaxBytes = cmp.Or(l.MaxBytes, 256<<20)
	l.MaxFiles = cmp.Or(l.MaxFiles, 50_000)
	return l
}

// DefaultTreesDir is where the work-tree snapshots are kept:
// $XDG_DATA_HOME/crow-acp/worktrees or ~/.local/share/crow-acp/worktrees;
// "" without a home directory.
func DefaultTreesDir(getenv func(string) string) string {
	if dir := getenv("XDG_DATA_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "crow-acp", "worktrees")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "share", "crow-acp", "worktrees")
	}
	return ""
}

// objectStore is the bare repository of one session's snapshots: named by
// a hash of the session id, which may hold any character.
func objectStore(trees, sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return filepath.Join(trees, hex.EncodeToString(sum[:12])+".git")
}

// RemoveTrees deletes a session's snapshots (with the session).
func RemoveTrees(trees, sessionID string) error {
	if trees == "" {
		return nil
	}
	return os.RemoveAll(objectStore(trees, sessionID))
}

// snapshotArgs are set on every command that reads the work tree: the
// bytes are kept exactly as they are (no end-of-line conversion), modes
// and symbolic links as they are.
var snapshotArgs = []string{"-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.filemode=true",
	"-c", "core.symlinks=true", "-c", "core.ignorecase=false", "-c", "core.quotepath=false", "-c", "core.bigFileThreshold=1g", "-c", "diff.ignoreSubmodules=all"}

// infoAttributes overrides every attribute the work tree's .gitattributes
// sets that could change the bytes kept (info/attributes wins over them).
const infoAttributes = "* -text -eol -filter -ident -working-tree-encoding\n"

// repo is one session's object store over a work tree.
type repo struct {
	dir, cwd, index string
	timeout         time.Duration
}

func (r repo) git(ctx context.Context, maxOut int, args ...string) ([]byte, error) {
	res, err := safegit.Cmd{
		Dir:       r.cwd,
		Args:      append(append([]string(nil), snapshotArgs...), args...),
		Extra:     []string{"GIT_DIR=" + r.dir, "GIT_WORK_TREE=" + r.cwd, "GIT_INDEX_FILE=" + r.index, "GIT_LITERAL_PATHSPECS=1"},
		Timeout:   r.timeout,
		MaxOutput: maxOut,
	}.Run(ctx)
	if err == nil && res.Cut {
		err = fmt.Errorf("git %s: more than %d bytes of output", args[0], maxOut)
	}
	return res.Stdout, err
}

// open makes the object store if it does not exist.
func openRepo(ctx context.Context, trees, sessionID, cwd string, timeout time.Duration) (repo, error) {
	r := repo{dir: objectStore(trees, sessionID), cwd: cwd, timeout: timeout}
	r.index = filepath.Join(r.dir, "crow-index")
	if _, err := os.Stat(filepath.Join(r.dir, "HEAD")); err == nil {
		return r, nil
	}
	if err := os.MkdirAll(trees, 0o700); err != nil {
		return r, err
	}
	if _, err := (safegit.Cmd{Dir: trees, Args: []string{"init", "--bare", "-q", r.dir}, Timeout: timeout}).Run(ctx); err != nil {
		return r, err
	}
	// No hook or configuration of ours runs either: the object store is
	// a plain bare repository with exact-bytes attributes.
	if err := os.WriteFile(filepath.Join(r.dir, "info", "attributes"), []byte(infoAttributes), 0o600); err != nil {
		_ = os.MkdirAll(filepath.Join(r.dir, "info"), 0o700)
		if err := os.WriteFile(filepath.Join(r.dir, "info", "attributes"), []byte(infoAttributes), 0o600); err != nil {
			return r, err
		}
	}
	return r, nil
}

// isWorkTree reports whether cwd is inside a git work tree (a .git entry
// in it or above it), without running git in it.
func isWorkTree(cwd string) bool {
	for dir := filepath.Clean(cwd); ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// snapshot adds the work tree to the object store's index (what the
// work tree's .gitignore files leave) and writes it as a tree, within l.
func (r repo) snapshot(ctx context.Context, l TreeLimits) (string, error) {
	// A fresh index each time: with a nested repository (gitlink) in it,
	// git would look into that repository for changes and run what its
	// configuration names.
	if err := os.Remove(r.index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	list, err := r.git(ctx, 64<<20, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return "", err
	}
	var total int64
	n := 0
	for _, p := range bytes.Split(list, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		if n++; n > l.MaxFiles {
			return "", fmt.Errorf("the work tree has more than %d files", l.MaxFiles)
		}
		if fi, err := os.Lstat(filepath.Join(r.cwd, string(p))); err == nil && fi.Mode().IsRegular() {
			if total += fi.Size(); total > l.MaxBytes {
				return "", fmt.Errorf("the work tree holds more than %d bytes", l.MaxBytes)
			}
		}
	}
	if _, err := r.git(ctx, 1<<20, "add", "-A", "--", "."); err != nil {
		return "", err
	}
	out, err := r.git(ctx, 1<<10, "write-tree")
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(out)), nil
}

// entry is one side of a raw diff line: absent, or a mode and object id.
type entry struct {
	mode uint32 // git's: 0100644, 0100755, 0120000, 0160000
	oid  string
}

func (e entry) exists() bool { return e.mode != 0 }

// change is one path that differs between two trees.
type change struct {
	path     string
	old, new entry
}

// ErrRawDiff is returned (wrapped) for diff-tree output that is not the
// raw format.
var ErrRawDiff = errors.New("unexpected diff-tree output")

// parseRawDiff reads `git diff-tree -r -z --no-renames` output:
// ":<mode> <mode> <oid> <oid> <status>\0<path>\0" per change. The paths
// come from the work tree: any byte but NUL.
func parseRawDiff(out []byte) ([]change, error) {
	var changes []change
	for len(out) > 0 {
		head, rest, ok := bytes.Cut(out, []byte{0})
		if !ok {
			return nil, fmt.Errorf("%w: a record without its path", ErrRawDiff)
		}
		path, rest, ok := bytes.Cut(rest, []byte{0})
		if !ok || len(path) == 0 {
			return nil, fmt.Errorf("%w: a record without its path", ErrRawDiff)
		}
		out = rest
		f := bytes.Fields(head)
		if len(f) != 5 || len(f[0]) < 2 || f[0][0] != ':' {
			return nil, fmt.Errorf("%w: %q", ErrRawDiff, head)
		}
		var c change
		var err error
		if c.old, err = parseEntry(f[0][1:], f[2]); err != nil {
			return nil, err
		}
		if c.new, err = parseEntry(f[1], f[3]); err != nil {
			return nil, err
		}
		c.path = string(path)
		changes = append(changes, c)
	}
	return changes, nil
}

func parseEntry(mode, oid []byte) (entry, error) {
	m, err := strconv.ParseUint(string(mode), 8, 32)
	if err != nil {
		return entry{}, fmt.Errorf("%w: mode %q", ErrRawDiff, mode)
	}
	for _, b := range oid {
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f') {
			return entry{}, fmt.Errorf("%w: object id %q", ErrRawDiff, oid)
		}
	}
	if len(oid) != 40 && len(oid) != 64 {
		return entry{}, fmt.Errorf("%w: object id %q", ErrRawDiff, oid)
	}
	if m == 0 {
		return entry{}, nil
	}
	return entry{mode: uint32(m), oid: string(oid)}, nil
}

// diff lists the paths that differ between trees a and b.
func (r repo) diff(ctx context.Context, a, b string) (map[string]change, error) {
	out, err := r.git(ctx, 64<<20, "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", a, b)
	if err != nil {
		return nil, err
	}
	list, err := parseRawDiff(out)
	if err != nil {
		return nil, err
	}
	m := make(map[string]change, len(list))
	for _, c := range list {
		m[c.path] = c
	}
	return m, nil
}

// tracked reports which of paths tree has.
func (r repo) tracked(ctx context.Context, tree string, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(paths) == 0 {
		return out, nil
	}
	list, err := r.git(ctx, 16<<20, append([]string{"ls-tree", "-r", "-z", "--name-only", "--full-tree", tree, "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	for _, p := range bytes.Split(list, []byte{0}) {
		if len(p) > 0 {
			out[string(p)] = true
		}
	}
	return out, nil
}

// blob reads an object's bytes, at most limit of them.
func (r repo) blob(ctx context.Context, oid string, limit int64) ([]byte, error) {
	return r.git(ctx, int(limit), "cat-file", "blob", oid)
}

// fileState is the state an entry describes, with data its bytes (for a
// symbolic link, its target); why says why it cannot be restored.
func (e entry) fileState(data []byte) (st persistence.FileState, why string) {
	switch e.mode {
	case 0:
		return persistence.FileState{}, ""
	case 0o100644, 0o100755:
		return persistence.FileState{Exists: true, Mode: e.mode & 0o777, Hash: persistence.Hash(data)}, ""
	case 0o120000:
		return persistence.FileState{Exists: true, Mode: uint32(fs.ModePerm), Hash: "symlink:" + persistence.Hash(data)}, ""
	}
	return persistence.FileState{Exists: true}, "a nested repository (submodule): not covered"
}
