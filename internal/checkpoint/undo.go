package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Options of Undo and Redo.
type Options struct {
	DryRun bool // say what would be done, change nothing
	Force  bool // overwrite files changed since the agent wrote them
	// Trees is where the work-tree snapshots are (Recorder.Trees).
	Trees  string
	Limits persistence.CheckpointLimits
	Tree   TreeLimits
	// AfterFile, when set, is called after each file is written or
	// removed (a test stops the process there).
	AfterFile func(i int, path string)
}

// Report says what an undo or redo did, file by file.
type Report struct {
	SessionID string
	UndoID    int64
	FromTurn  int64
	Redo      bool
	DryRun    bool
	// Interrupted: an undo or redo found unfinished at start (PendingUndos).
	Interrupted bool
	Files       []persistence.UndoFile
	// NotCovered says what the undo could not cover (commands' effects
	// without a snapshot, for one).
	NotCovered []string
}

// ErrNothingToRedo is returned (wrapped) by Redo when the session has no
// undo left to redo.
var ErrNothingToRedo = errors.New("nothing to redo")

// target is what one path goes back to.
type target struct {
	path         string
	before       persistence.FileState
	unrestorable string
	load         func(ctx context.Context) ([]byte, error) // before's bytes (a link's target)
	// last is what the agent last left there, compared with what is now
	// (nil: git says whether it changed: see changedSince).
	last         *persistence.FileState
	changedSince func() bool // set for paths git compares
	unknownLast  string      // why it cannot be told whether it changed
	unchanged    bool        // git says it is as it was: nothing to do
}

// Undo restores the files of session sessionID as they were before turn
// fromTurn (the seq of its prompt) and every later turn, and hides those
// turns' messages. A file changed since the agent last wrote it is skipped
// (with a diff) unless o.Force. The undo is recorded before any file is
// touched and each file is replaced by a rename, so a process killed
// midway leaves each file old or new and PendingUndos reports it.
func Undo(ctx context.Context, st Store, sessionID string, fromTurn int64, o Options) (*Report, error) {
	sess, err := st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	cps, err := st.Checkpoints(ctx, sessionID, fromTurn)
	if err != nil {
		return nil, err
	}
	if cps, err = liveCheckpoints(ctx, st, sessionID, cps); err != nil {
		return nil, err
	}
	rep := &Report{SessionID: sessionID, FromTurn: fromTurn, DryRun: o.DryRun}
	targets, err := plan(ctx, st, sess, cps, o, rep)
	if err != nil {
		return nil, err
	}
	type work struct {
		t    target
		data []byte
	}
	var todo []work
	for _, t := range targets {
		abs := absPath(sess.Cwd, t.path)
		now, err := currentState(abs)
		if err != nil {
			rep.Files = append(rep.Files, persistence.UndoFile{Path: t.path, Action: persistence.UndoSkipped, Reason: "unreadable: " + err.Error(), Before: t.before})
			continue
		}
		f := persistence.UndoFile{Path: t.path, Before: t.before, Now: now}
		switch {
		case t.unchanged || sameState(now, t.before):
			f.Action = persistence.UndoUnchanged
		case t.unrestorable != "":
			f.Action, f.Reason = persistence.UndoNotCovered, t.unrestorable
		default:
			f.Action = persistence.UndoRestored
			if !t.before.Exists {
				f.Action = persistence.UndoDeleted
			}
			var data []byte
			if t.before.Exists {
				if data, err = t.load(ctx); err != nil {
					f.Action, f.Reason = persistence.UndoNotCovered, "its bytes cannot be read back: "+err.Error()
					break
				}
			}
			if why := conflict(t, now); why != "" && !o.Force {
				f.Action, f.Reason = persistence.UndoSkipped, why+" (--force restores it)"
				f.Diff = fileDiff(abs, t.path, data, t.before.Exists)
				break
			}
			todo = append(todo, work{t, data})
		}
		rep.Files = append(rep.Files, f)
	}
	if o.DryRun {
		return rep, nil
	}
	// What is there now is kept, for redo.
	for i := range rep.Files {
		f := &rep.Files[i]
		if f.Action == persistence.UndoRestored || f.Action == persistence.UndoDeleted {
			f.NowKept = keepNow(ctx, st, sessionID, absPath(sess.Cwd, f.Path), f.Now, o.Limits)
		}
	}
	u := &persistence.Undo{SessionID: sessionID, FromTurn: fromTurn, State: persistence.UndoPending, Force: o.Force, Files: rep.Files}
	if err := st.CreateUndo(ctx, u); err != nil {
		return nil, err
	}
	rep.UndoID = u.ID
	n := 0
	for i := range rep.Files {
		f := &rep.Files[i]
		if f.Action != persistence.UndoRestored && f.Action != persistence.UndoDeleted {
			continue
		}
		w := todo[slices.IndexFunc(todo, func(w work) bool { return w.t.path == f.Path })]
		if err := apply(sess.Cwd, f.Path, f.Before, w.data); err != nil {
			f.Action, f.Reason = persistence.UndoSkipped, "could not be written: "+err.Error()
		}
		if o.AfterFile != nil {
			o.AfterFile(n, f.Path)
		}
		n++
	}
	u.State, u.Files = persistence.UndoDone, rep.Files
	if err := st.UpdateUndo(ctx, u); err != nil {
		return rep, err
	}
	return rep, nil
}

// liveCheckpoints are cps without those of turns an undo took back (and
// no redo brought back): their changes were reverted, or left to whoever
// changed the file since.
func liveCheckpoints(ctx context.Context, st Store, sessionID string, cps []persistence.Checkpoint) ([]persistence.Checkpoint, error) {
	undos, err := st.Undos(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cps, func(c persistence.Checkpoint) bool {
		for _, u := range undos {
			if u.State == persistence.UndoDone && c.Turn >= u.FromTurn && c.Turn <= u.LastSeq {
				return true
			}
		}
		return false
	}), nil
}

// conflict says why a file must not be overwritten: it changed since the
// agent (or the turn's commands) last wrote it, or that cannot be told.
func conflict(t target, now persistence.FileState) string {
	if t.last != nil && sameState(now, *t.last) {
		return ""
	}
	if t.changedSince != nil && !t.changedSince() {
		return ""
	}
	if t.unknownLast != "" {
		return t.unknownLast
	}
	return "changed since the agent wrote it"
}

// sameState: both absent, or the same bytes and mode.
func sameState(a, b persistence.FileState) bool {
	if a.Exists != b.Exists {
		return false
	}
	return !a.Exists || a.Hash == b.Hash && a.Mode == b.Mode
}

// keepNow stores the bytes at abs as state now says, for redo; false when
// they are absent or cannot be kept.
func keepNow(ctx context.Context, st Store, sessionID, abs string, now persistence.FileState, l persistence.CheckpointLimits) bool {
	if !now.Exists {
		return true
	}
	var data []byte
	if h, ok := strings.CutPrefix(now.Hash, "symlink:"); ok {
		target, err := os.Readlink(abs)
		if err != nil || persistence.Hash([]byte(target)) != h {
			return false
		}
		data = []byte(target)
	} else {
		s, d, why, err := readState(abs, l.OrDefaults().File)
		if err != nil || why != "" || s.Hash != now.Hash {
			return false
		}
		data = d
	}
	_, err := st.PutBlob(ctx, sessionID, data, l)
	return err == nil
}

// plan works out, for every path the turns from the first checkpoint on
// changed, what it goes back to.
func plan(ctx context.Context, st Store, sess *persistence.Session, cps []persistence.Checkpoint, o Options, rep *Report) ([]target, error) {
	files := map[string][]persistence.Checkpoint{}
	var order []string
	var t0, ta *persistence.Checkpoint
	for i := range cps {
		c := &cps[i]
		switch c.Kind {
		case persistence.CheckpointFile:
			if _, ok := files[c.Path]; !ok {
				order = append(order, c.Path)
			}
			files[c.Path] = append(files[c.Path], *c)
		case persistence.CheckpointTree:
			if c.Unrestorable != "" {
				rep.NotCovered = append(rep.NotCovered, fmt.Sprintf("what the commands of the turn at seq %d changed: %s", c.Turn, c.Unrestorable))
			} else if t0 == nil {
				t0 = c
			}
		case persistence.CheckpointTreeAfter:
			if c.Unrestorable == "" && t0 != nil {
				ta = c
			}
		}
	}
	var (
		rp         repo
		d0, dA     map[string]change
		now        string
		treeTarget = t0 != nil
	)
	if treeTarget {
		var err error
		rp, now, err = nowTree(ctx, sess, o)
		if err == nil {
			d0, err = rp.diff(ctx, t0.Before.Hash, now)
		}
		if err == nil && ta != nil {
			dA, err = rp.diff(ctx, ta.Before.Hash, now)
		}
		if err != nil {
			rep.NotCovered = append(rep.NotCovered, "what commands changed: the snapshots cannot be compared: "+err.Error())
			treeTarget = false
		}
		for p := range d0 {
			if _, ok := files[p]; !ok {
				order = append(order, p)
			}
		}
	}
	slices.Sort(order)
	l := o.Limits.OrDefaults()
	// Paths the agent wrote that git says did not change since the first
	// snapshot: unchanged when git tracks them, else (ignored) the
	// checkpoint says.
	var quiet []string
	for _, p := range order {
		if _, changed := d0[p]; treeTarget && !changed && len(files[p]) > 0 && t0.ID < files[p][0].ID {
			quiet = append(quiet, p)
		}
	}
	var tracked map[string]bool
	if len(quiet) > 0 {
		var err error
		if tracked, err = rp.tracked(ctx, now, quiet); err != nil {
			return nil, err
		}
	}
	var out []target
	for _, p := range order {
		fc := files[p]
		t := target{path: p}
		ch, inD0 := d0[p]
		fromTree := treeTarget && (len(fc) == 0 || t0.ID < fc[0].ID) && (inD0 || tracked[p])
		switch {
		case fromTree && !inD0:
			t.unchanged = true
		case fromTree:
			old := ch.old
			if old.exists() {
				data, err := rp.blob(ctx, old.oid, l.File)
				if err != nil {
					t.before, t.unrestorable = persistence.FileState{Exists: true}, "its bytes before the turn: "+err.Error()
					break
				}
				t.before, t.unrestorable = old.fileState(data)
				t.load = func(context.Context) ([]byte, error) { return data, nil }
			}
		default:
			first := fc[0]
			t.before, t.unrestorable = first.Before, first.Unrestorable
			if t.before.Exists && t.unrestorable == "" {
				t.load = func(ctx context.Context) ([]byte, error) { return st.Blob(ctx, sess.ID, first.Before.Hash) }
			}
		}
		// What the agent last left there.
		if len(fc) > 0 {
			last := fc[len(fc)-1]
			t.last = last.After
			if last.After == nil {
				t.unknownLast = "what the agent wrote there was not recorded (its turn was interrupted)"
			}
			if ta != nil && ta.ID > last.ID && dA != nil {
				_, moved := dA[p]
				t.changedSince = func() bool { return moved }
			}
		} else if ta != nil && dA != nil {
			_, moved := dA[p]
			t.changedSince = func() bool { return moved }
		} else {
			t.changedSince = func() bool { return true }
			t.unknownLast = "no snapshot of the work tree after the turn: whether it changed since cannot be told"
		}
		out = append(out, t)
	}
	return out, nil
}

// nowTree snapshots the work tree as it is now, with an index of its own
// (a turn may be snapshotting meanwhile).
func nowTree(ctx context.Context, sess *persistence.Session, o Options) (repo, string, error) {
	if o.Trees == "" {
		return repo{}, "", errors.New("no place for snapshots is configured")
	}
	l := o.Tree.orDefaults()
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	rp, err := openRepo(ctx, o.Trees, sess.ID, sess.Cwd, l.Timeout)
	if err != nil {
		return rp, "", err
	}
	idx, err := os.CreateTemp(rp.dir, "undo-index-*")
	if err != nil {
		return rp, "", err
	}
	name := idx.Name()
	idx.Close()
	defer os.Remove(name)
	rp.index = name
	tree, err := rp.snapshot(ctx, l)
	return rp, tree, err
}

// apply makes the file p (a checkpoint's path: relative to cwd, or
// absolute) hold data with the state's mode (a symbolic link when its hash
// says so), or removes it when the state is absent: written to a temporary
// file, synced, renamed over it, the directory synced. Every step goes
// through an os.Root of cwd (of the file's directory for an absolute
// path): a directory a command swapped for a link never takes a write out
// of it.
func apply(cwd, p string, st persistence.FileState, data []byte) error {
	rootDir, name := cwd, filepath.FromSlash(p)
	if filepath.IsAbs(name) || cwd == "" {
		rootDir, name = filepath.Dir(name), filepath.Base(name)
		if st.Exists {
			if err := os.MkdirAll(rootDir, 0o755); err != nil {
				return err
			}
		}
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		if !st.Exists && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer root.Close()
	dir := filepath.Dir(name)
	if !st.Exists {
		if err := root.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return syncDir(root, dir)
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(dir, ".crow-undo-"+hex.EncodeToString(suffix[:]))
	defer root.Remove(tmp) // gone after the rename
	if strings.HasPrefix(st.Hash, "symlink:") {
		if err := root.Symlink(string(data), tmp); err != nil {
			return err
		}
	} else {
		f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(os.FileMode(st.Mode) & modeBits)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if err := root.Rename(tmp, name); err != nil {
		return err
	}
	return syncDir(root, dir)
}

func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Redo re-applies the session's last undo while nothing new happened in
// the session since (no new message): the files go back to what the undo
// found there, and the turns' messages are active again. A file changed
// since the undo is skipped unless o.Force. ErrNothingToRedo when the
// last undo is not one to redo; persistence.ErrConflict when the session
// moved on.
func Redo(ctx context.Context, st Store, sessionID string, o Options) (*Report, error) {
	sess, err := st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	undos, err := st.Undos(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if len(undos) == 0 || undos[len(undos)-1].State != persistence.UndoDone {
		return nil, fmt.Errorf("session %q: %w", sessionID, ErrNothingToRedo)
	}
	u := undos[len(undos)-1]
	rep := &Report{SessionID: sessionID, UndoID: u.ID, FromTurn: u.FromTurn, Redo: true, DryRun: o.DryRun}
	if !o.DryRun {
		u.State = persistence.UndoRedoing
		if err := st.UpdateUndo(ctx, &u); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, f := range u.Files {
		if f.Action != persistence.UndoRestored && f.Action != persistence.UndoDeleted {
			continue
		}
		abs := absPath(sess.Cwd, f.Path)
		r := persistence.UndoFile{Path: f.Path, Before: f.Now, Action: persistence.UndoRestored}
		if !f.Now.Exists {
			r.Action = persistence.UndoDeleted
		}
		cur, err := currentState(abs)
		var data []byte
		switch {
		case err != nil:
			r.Action, r.Reason = persistence.UndoSkipped, "unreadable: "+err.Error()
		case sameState(cur, f.Now):
			r.Action = persistence.UndoUnchanged
		case f.Now.Exists && !f.NowKept:
			r.Action, r.Reason = persistence.UndoNotCovered, "its bytes were not kept by the undo"
		default:
			if f.Now.Exists {
				if data, err = st.Blob(ctx, sessionID, strings.TrimPrefix(f.Now.Hash, "symlink:")); err != nil {
					r.Action, r.Reason = persistence.UndoNotCovered, "its bytes cannot be read back: "+err.Error()
					break
				}
			}
			if !sameState(cur, f.Before) && !o.Force {
				r.Action, r.Reason = persistence.UndoSkipped, "changed since the undo (--force re-applies it)"
				r.Diff = fileDiff(abs, f.Path, data, f.Now.Exists)
				break
			}
			if !o.DryRun {
				if err := apply(sess.Cwd, f.Path, f.Now, data); err != nil {
					r.Action, r.Reason = persistence.UndoSkipped, "could not be written: "+err.Error()
				}
				if o.AfterFile != nil {
					o.AfterFile(n, f.Path)
				}
				n++
			}
		}
		r.Now = cur
		rep.Files = append(rep.Files, r)
	}
	if o.DryRun {
		return rep, nil
	}
	u.State = persistence.UndoRedone
	return rep, st.UpdateUndo(ctx, &u)
}

// PendingUndos reports the undos and redos of session sessionID ("": of
// every session) that a process left unfinished (killed midway) and marks
// them interrupted: for each file, whether it was reached (restored,
// deleted) or not (skipped, with what is there); their messages were not
// hidden. Call it holding the session's lease (no live process can be
// undoing it), before the session's next undo or turn.
func PendingUndos(ctx context.Context, st Store, sessionID string) ([]*Report, error) {
	undos, err := st.UnfinishedUndos(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Report
	for _, u := range undos {
		if sessionID != "" && u.SessionID != sessionID {
			continue
		}
		sess, err := st.GetSession(ctx, u.SessionID)
		if err != nil {
			return out, err
		}
		redo := u.State == persistence.UndoRedoing
		rep := &Report{SessionID: u.SessionID, UndoID: u.ID, FromTurn: u.FromTurn, Redo: redo, Interrupted: true}
		for _, f := range u.Files {
			if f.Action != persistence.UndoRestored && f.Action != persistence.UndoDeleted {
				continue
			}
			from, to := f.Now, f.Before
			if redo {
				from, to = to, from
			}
			r := persistence.UndoFile{Path: f.Path, Before: to, Action: persistence.UndoRestored}
			if !to.Exists {
				r.Action = persistence.UndoDeleted
			}
			cur, err := currentState(absPath(sess.Cwd, f.Path))
			switch {
			case err != nil:
				r.Action, r.Reason = persistence.UndoSkipped, "unreadable: "+err.Error()
			case sameState(cur, to):
			case sameState(cur, from):
				r.Action, r.Reason = persistence.UndoSkipped, "not reached: left as it was"
			default:
				r.Action, r.Reason = persistence.UndoSkipped, "changed by something else meanwhile"
			}
			r.Now = cur
			rep.Files = append(rep.Files, r)
		}
		u.State = persistence.UndoInterrupted
		if err := st.UpdateUndo(ctx, &u); err != nil {
			return out, err
		}
		out = append(out, rep)
	}
	return out, nil
}
