package tool

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/crow-acp/crow-acp/internal/gitignore"
)

// File access beneath a held root. Every tool reaches a file by opening
// Path.Root with os.OpenRoot and walking Path.Rel beneath it: the kernel
// (openat with O_NOFOLLOW per component) refuses any component that would
// leave the root at the time of use, so resolving a path once and using it
// later leaves no window in which a swapped directory or symlink can send
// the access outside. Only regular files are read or written; a FIFO, socket
// or device is refused before it is opened, and a read is bounded however
// much the file grows.

// testHookOpened, when set by a test, runs after a file was checked and
// before it is opened, where a concurrent swap would land.
var testHookOpened func(name string)

// openRoot holds p's root directory.
func openRoot(p Path) (*os.Root, error) { return os.OpenRoot(p.Root) }

// checkRegular refuses what tools must not read or overwrite: directories,
// symlinks (Rel had none when resolved, so one now is a swap), FIFOs,
// sockets, devices, and for a path taken as inside, a file with other hard
// links.
func checkRegular(p Path, fi fs.FileInfo) error {
	switch m := fi.Mode(); {
	case m.IsDir():
		return fmt.Errorf("%s is a directory", p.Display)
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%s became a symbolic link after it was resolved; it is not followed", p.Display)
	case !m.IsRegular():
		return fmt.Errorf("%s is not a regular file (a FIFO, socket or device); tools only read and write regular files", p.Display)
	case p.Inside && hardLinks(fi) > 1:
		return fmt.Errorf("%s has other hard links (one may be outside the workspace); ask again to access it", p.Display)
	}
	return nil
}

// openRegular opens name beneath r for reading once it is checked to be a
// regular file, and checks that what was opened is the file checked.
func openRegular(r *os.Root, p Path, name string) (*os.File, fs.FileInfo, error) {
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if err := checkRegular(p, fi); err != nil {
		return nil, nil, err
	}
	if testHookOpened != nil {
		testHookOpened(name)
	}
	f, err := r.OpenFile(name, openReadFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	opened, err := f.Stat()
	if err == nil && !os.SameFile(fi, opened) {
		err = fmt.Errorf("%s changed while it was being opened", p.Display)
	}
	if err == nil {
		err = checkRegular(p, opened)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, opened, nil
}

// errTooLarge is returned (wrapped) for a file over a read's limit.
var errTooLarge = errors.New("too large")

// readRegular reads the regular file p whole, at most limit bytes (a file
// that grows past its stat size is still cut off at the limit).
func readRegular(p Path, limit int64) ([]byte, error) {
	r, err := openRoot(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, fi, err := openRegular(r, p, p.Rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, %w to read whole (limit %d)", p.Display, fi.Size(), errTooLarge, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while it was read, %w", p.Display, limit, errTooLarge)
	}
	return b, nil
}

// statRegular checks that p is a regular file that may be read as resolved
// (before the client is asked to read it).
func statRegular(p Path) (fs.FileInfo, error) {
	r, err := openRoot(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Lstat(p.Rel)
	if err != nil {
		return nil, err
	}
	return fi, checkRegular(p, fi)
}

// writeRegular replaces p's content: written to a temporary file in p's
// directory (held open as a root, so the directory cannot be swapped between
// the write and the rename) and renamed over p. The rename replaces the
// name itself: a symlink or a hard link at p is never written through. An
// existing file keeps its mode; a new one gets newMode (0: 0644); missing
// parent directories are created.
func writeRegular(p Path, data []byte, newMode fs.FileMode) error {
	r, err := openRoot(p)
	if err != nil {
		return err
	}
	defer r.Close()
	dir, base := path.Split(p.Rel)
	if base == "." || base == ".." || base == "" {
		return fmt.Errorf("%s is a directory", p.Display)
	}
	if dir != "" {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	} else {
		dir = "."
	}
	d, err := r.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	mode := cmp.Or(newMode.Perm(), 0o644)
	if fi, err := d.Lstat(base); err == nil {
		if err := checkRegular(p, fi); err != nil {
			return err
		}
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp := "." + base + ".crow-" + randomSuffix() + ".tmp"
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // the umask may have narrowed it
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmp, base)
	}
	if err != nil {
		_ = d.Remove(tmp)
	}
	return err
}

// chmodRegular sets the permission bits of the regular file p (one the
// editor just wrote), beneath its root.
func chmodRegular(p Path, mode fs.FileMode) error {
	if _, err := statRegular(p); err != nil {
		return err
	}
	r, err := openRoot(p)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Chmod(p.Rel, mode.Perm())
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readDir lists the directory p, sorted by name.
func readDir(p Path) ([]fs.DirEntry, error) {
	r, err := openRoot(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	entries, err := fs.ReadDir(r.FS(), p.Rel)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

// walkRoot visits the files below the directory p (skipping skipDirs and
// crow-acp's own files and what .gitignore files ignore, not following
// symlinks) with their paths relative to p, until fn returns false or ctx
// ends. fn gets the root it may open the file from and the file's
// name beneath it.
func walkRoot(ctx context.Context, p Path, fn func(r *os.Root, name, rel string, d fs.DirEntry) bool) error {
	r, err := openRoot(p)
	if err != nil {
		return err
	}
	defer r.Close()
	stop := errors.New("stop")
	ig := gitignore.New(r)
	err = fs.WalkDir(r.FS(), p.Rel, func(name string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if name == p.Rel {
				return err
			}
			return nil // unreadable entries are skipped
		}
		if name == p.Rel {
			if !d.IsDir() {
				return fmt.Errorf("%s is not a directory", p.Display)
			}
			return nil
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return fs.SkipDir
		}
		// crow-acp's own files (the credentials file in a workspace
		// holding ~/.config) are read only when named, after asking.
		if !d.IsDir() && ownFile(p.own, filepath.Join(p.Root, filepath.FromSlash(name))) {
			return nil
		}
		if ig.Ignored(name, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel := name
		if p.Rel != "." {
			rel = name[len(p.Rel)+1:]
		}
		if !fn(r, name, rel, d) {
			return stop
		}
		return nil
	})
	if err == stop {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory not found: %s", p.Display)
	}
	return err
}

// skipDirs are never walked: version control and dependency caches.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, "node_modules": true}
