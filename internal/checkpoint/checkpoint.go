// Package checkpoint keeps what a turn changed so that it can be undone:
// each file's bytes and mode (or its absence) before a tool first changes
// it in a turn, and, in a git work tree, a snapshot of the tree before the
// turn's first command, in an object store of crow-acp's own. Undo puts
// the files back as they were before a turn (and every later one) and
// hides those turns' messages; Redo re-applies an undone range while
// nothing new happened.
//
// Everything is written before the change it covers: BeforeChange returns
// once the checkpoint is committed, so a process killed between the two
// leaves a checkpoint and never a change without one. Undo writes its
// record before it touches a file and replaces each file by a rename, so
// one killed midway leaves every file old or new, and PendingUndos reports
// it at the next start.
//
// The turn is the seq of the turn's prompt message (persistence.Checkpoint.Turn).
package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Saver is what recording checkpoints needs of the store.
type Saver interface {
	SaveCheckpoint(ctx context.Context, c *persistence.Checkpoint, data []byte, l persistence.CheckpointLimits) (bool, error)
	SetCheckpointAfter(ctx context.Context, sessionID string, turn int64, path string, after persistence.FileState) error
	Checkpoints(ctx context.Context, sessionID string, fromTurn int64) ([]persistence.Checkpoint, error)
}

// Store is what undo and redo need of the store.
type Store interface {
	Saver
	PutBlob(ctx context.Context, sessionID string, data []byte, l persistence.CheckpointLimits) (string, error)
	Blob(ctx context.Context, sessionID, hash string) ([]byte, error)
	CreateUndo(ctx context.Context, u *persistence.Undo) error
	UpdateUndo(ctx context.Context, u *persistence.Undo) error
	Undos(ctx context.Context, sessionID string) ([]persistence.Undo, error)
	UnfinishedUndos(ctx context.Context) ([]persistence.Undo, error)
	GetSession(ctx context.Context, id string) (*persistence.Session, error)
}

// Recorder records checkpoints for the agent's tools and commands.
type Recorder struct {
	Store  Saver
	Limits persistence.CheckpointLimits // zero: the defaults
	// Trees is the directory of the work-tree snapshots (one object store
	// per session, see DefaultTreesDir); "": commands' effects are not
	// covered.
	Trees string
	Tree  TreeLimits // zero: the defaults

	// seen are the paths this recorder checkpointed in each session's
	// latest turn: a file edited again in the same turn is not read again
	// (the store keeps the first anyway). EndTurn forgets the session's.
	mu   sync.Mutex
	seen map[string]turnPaths
}

type turnPaths struct {
	turn  int64
	paths map[string]bool
}

// checkpointed reports whether path was checkpointed in the session's turn.
func (r *Recorder) checkpointed(session string, turn int64, path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	tp, ok := r.seen[session]
	return ok && tp.turn == turn && tp.paths[path]
}

func (r *Recorder) remember(session string, turn int64, path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]turnPaths{}
	}
	tp, ok := r.seen[session]
	if !ok || tp.turn != turn {
		tp = turnPaths{turn: turn, paths: map[string]bool{}}
		r.seen[session] = tp
	}
	tp.paths[path] = true
}

func (r *Recorder) forget(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, session)
}

// BeforeChange records the state of absPath before the agent's tool
// changes it in turn of session s, and returns once it is committed. The
// first checkpoint of a file per turn wins: later calls in the same turn
// store nothing. A file that cannot be kept (over a limit, not a regular
// file) is recorded as not restorable and is no error: the write goes on.
// An error means nothing was recorded (the store failed): the caller
// should not make the change.
func (r *Recorder) BeforeChange(ctx context.Context, s *persistence.Session, turn int64, absPath string) error {
	l := r.Limits.OrDefaults()
	c := &persistence.Checkpoint{SessionID: s.ID, Turn: turn, Kind: persistence.CheckpointFile, Path: relPath(s.Cwd, absPath)}
	if r.checkpointed(s.ID, turn, c.Path) {
		return nil
	}
	st, data, why, err := readState(absPath, l.File)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", absPath, err)
	}
	c.Before, c.Unrestorable = st, why
	if !utf8.ValidString(c.Path) {
		c.Unrestorable = "its name is not UTF-8"
	}
	if _, err := r.Store.SaveCheckpoint(ctx, c, data, l); err != nil {
		return fmt.Errorf("checkpoint %s: %w", absPath, err)
	}
	r.remember(s.ID, turn, c.Path)
	return nil
}

// AfterChange records what the tool's change left at absPath, so that an
// undo can tell a later change by someone else (the user, another tool)
// and leave it alone. Call it after every change BeforeChange preceded;
// the last call of a turn is what counts.
func (r *Recorder) AfterChange(ctx context.Context, s *persistence.Session, turn int64, absPath string) error {
	st, err := currentState(absPath)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", absPath, err)
	}
	if err := r.Store.SetCheckpointAfter(ctx, s.ID, turn, relPath(s.Cwd, absPath), st); err != nil {
		return fmt.Errorf("checkpoint %s: %w", absPath, err)
	}
	return nil
}

// SnapshotWorkTree records a snapshot of the session's work tree (its cwd)
// before turn's first command, once per turn. It is recorded, not
// returned, when it cannot be taken (not a git work tree, over a limit,
// git missing or too slow): undo then says the commands' effects are not
// covered. Nothing of the user's repository is written (its index, refs,
// stash, hooks and configuration are not even read: the object store is
// crow-acp's own, GIT_DIR, GIT_INDEX_FILE and GIT_WORK_TREE set), and
// nothing a git configuration names runs (safegit). An error is the
// store's.
func (r *Recorder) SnapshotWorkTree(ctx context.Context, s *persistence.Session, turn int64) error {
	return r.snapshotTree(ctx, s, turn, persistence.CheckpointTree)
}

// EndTurn records the work tree as the turn left it, when the turn took a
// snapshot before its commands: undo tells by it which files someone
// changed after the turn. Call it when the turn ends, however it ends
// (it also lets go of what the recorder kept of the turn).
func (r *Recorder) EndTurn(ctx context.Context, s *persistence.Session, turn int64) error {
	r.forget(s.ID)
	return r.snapshotTree(ctx, s, turn, persistence.CheckpointTreeAfter)
}

func (r *Recorder) snapshotTree(ctx context.Context, s *persistence.Session, turn int64, kind string) error {
	cps, err := r.Store.Checkpoints(ctx, s.ID, turn)
	if err != nil {
		return err
	}
	before := false
	for _, c := range cps {
		if c.Turn != turn {
			continue
		}
		if c.Kind == kind {
			if kind == persistence.CheckpointTree {
				return nil // one per turn
			}
		}
		before = before || c.Kind == persistence.CheckpointTree && c.Unrestorable == ""
	}
	if kind == persistence.CheckpointTreeAfter && !before {
		return nil
	}
	c := &persistence.Checkpoint{SessionID: s.ID, Turn: turn, Kind: kind}
	c.Before.Hash, c.Unrestorable = r.takeTree(ctx, s)
	c.Before.Exists = c.Unrestorable == ""
	_, err = r.Store.SaveCheckpoint(ctx, c, nil, r.Limits)
	return err
}

// takeTree is the tree of s's work tree, or why it could not be taken.
func (r *Recorder) takeTree(ctx context.Context, s *persistence.Session) (tree, why string) {
	switch {
	case r.Trees == "":
		return "", "no place for snapshots is configured"
	case s.Cwd == "" || !isWorkTree(s.Cwd):
		return "", "the working directory is not a git work tree"
	}
	l := r.Tree.orDefaults()
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	rp, err := openRepo(ctx, r.Trees, s.ID, s.Cwd, l.Timeout)
	if err == nil {
		tree, err = rp.snapshot(ctx, l)
	}
	if err != nil {
		return "", "no snapshot of the work tree: " + err.Error()
	}
	return tree, ""
}

// relPath is abs relative to cwd (or to cwd with its links resolved, as
// the tools resolve the paths they pass), slash-separated; abs itself when
// it is outside cwd.
func relPath(cwd, abs string) string {
	abs = filepath.Clean(abs)
	if cwd == "" {
		return filepath.ToSlash(abs)
	}
	for _, dir := range []string{filepath.Clean(cwd), resolved(cwd)} {
		if rel, err := filepath.Rel(dir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(abs)
}

func resolved(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// absPath is the file a checkpoint's path names.
func absPath(cwd, p string) string {
	if filepath.IsAbs(filepath.FromSlash(p)) {
		return filepath.FromSlash(p)
	}
	return filepath.Join(cwd, filepath.FromSlash(p))
}

// modeBits are the mode bits a checkpoint keeps and restores.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// readState reads p's state and, for a regular file within limit, its
// bytes; why says why bytes that exist were not read.
func readState(p string, limit int64) (st persistence.FileState, data []byte, why string, err error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return persistence.FileState{}, nil, "", nil
	}
	if err != nil {
		return st, nil, "", err
	}
	st = persistence.FileState{Exists: true, Mode: uint32(fi.Mode() & modeBits)}
	switch {
	case !fi.Mode().IsRegular():
		return st, nil, "not a regular file (" + fi.Mode().Type().String() + ")", nil
	case fi.Size() > limit:
		return st, nil, fmt.Sprintf("%d bytes, over the per-file limit of %d", fi.Size(), limit), nil
	}
	// O_NONBLOCK: a FIFO swapped in since the Lstat does not block the open.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return st, nil, "unreadable: " + err.Error(), nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return st, nil, "not a regular file", nil
	}
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return st, nil, "unreadable: " + err.Error(), nil
	}
	if int64(len(data)) > limit {
		return st, nil, fmt.Sprintf("over the per-file limit of %d bytes", limit), nil
	}
	st.Hash = persistence.Hash(data)
	return st, data, "", nil
}

// currentState is p's state with the hash of its bytes however large
// (streamed), or, for what is not a regular file, without one.
func currentState(p string) (persistence.FileState, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return persistence.FileState{}, nil
	}
	if err != nil {
		return persistence.FileState{}, err
	}
	st := persistence.FileState{Exists: true, Mode: uint32(fi.Mode() & modeBits)}
	if fi.Mode()&fs.ModeSymlink != 0 {
		link, err := os.Readlink(p)
		if err != nil {
			return st, err
		}
		st.Hash = "symlink:" + persistence.Hash([]byte(link))
		return st, nil
	}
	if !fi.Mode().IsRegular() {
		st.Hash = "type:" + fi.Mode().Type().String()
		return st, nil
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return st, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return st, err
	}
	st.Hash = hex.EncodeToString(h.Sum(nil))
	return st, nil
}
