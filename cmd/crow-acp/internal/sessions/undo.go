package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// UndoOptions are `sessions undo`'s and `sessions redo`'s.
type UndoOptions struct {
	To     int // the prompt to go back to (1-based, as the user sees them); 0: the last
	DryRun bool
	Force  bool
	Trees  string // where the work-tree snapshots are (checkpoint.DefaultTreesDir)
}

// undoLease is how long a command's undo holds the session: a running
// crow-acp cannot start a turn in it meanwhile.
const undoLease = 5 * time.Minute

// Undo restores the files of a session as they were before prompt o.To
// (and every later one), hides those prompts from the model's context and
// prints what it did with each file.
func Undo(ctx context.Context, cfg *config.Settings, w IO, id string, o UndoOptions) error {
	return withSession(ctx, cfg, w, id, func(st checkpoint.Store) error {
		ps, err := checkpoint.Prompts(ctx, st.(checkpoint.PromptSource), id)
		if err != nil {
			return err
		}
		turn, err := checkpoint.TurnOf(ps, o.To)
		if err != nil {
			return config.Usagef("sessions undo: %v", err)
		}
		number := 0
		for _, p := range ps {
			if p.Turn == turn {
				number = p.Number
			}
		}
		rep, err := checkpoint.Undo(ctx, st, id, turn, checkpoint.Options{DryRun: o.DryRun, Force: o.Force, Trees: o.Trees})
		if err != nil {
			return fmt.Errorf("undo: %w", err)
		}
		fmt.Fprint(w.Out, rep.Text())
		restored, deleted, skipped := rep.Counts()
		what := "undid"
		if o.DryRun {
			what = "would undo"
		}
		fmt.Fprintf(w.Err, "%s prompts %d to %d of %s: %d restored, %d deleted, %d skipped\n",
			what, number, lastNumber(ps), termsafe.Line(id), restored, deleted, skipped)
		return nil
	})
}

func lastNumber(ps []checkpoint.Prompt) int {
	n := 0
	for _, p := range ps {
		n = max(n, p.Number)
	}
	return n
}

// Redo re-applies the session's last undo while nothing new happened in
// it.
func Redo(ctx context.Context, cfg *config.Settings, w IO, id string, o UndoOptions) error {
	return withSession(ctx, cfg, w, id, func(st checkpoint.Store) error {
		rep, err := checkpoint.Redo(ctx, st, id, checkpoint.Options{DryRun: o.DryRun, Force: o.Force, Trees: o.Trees})
		if errors.Is(err, checkpoint.ErrNothingToRedo) {
			return fmt.Errorf("redo: the last change of %s is not an undo: nothing to redo", termsafe.Line(id))
		}
		if errors.Is(err, persistence.ErrConflict) {
			return fmt.Errorf("redo: %s has new prompts since its undo: nothing to redo", termsafe.Line(id))
		}
		if err != nil {
			return fmt.Errorf("redo: %w", err)
		}
		fmt.Fprint(w.Out, rep.Text())
		return nil
	})
}

// withSession runs fn on session id with its lease held (a running
// crow-acp in it is refused, and refuses to start a turn meanwhile), every
// write fenced by it.
func withSession(ctx context.Context, cfg *config.Settings, w IO, id string, fn func(st checkpoint.Store) error) error {
	store, err := openFound(ctx, cfg, id)
	if err != nil {
		return err
	}
	defer store.Close()
	host, _ := os.Hostname()
	l := &persistence.Lease{SessionID: id, Owner: "crow-acp-sessions-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		PID: os.Getpid(), Host: host}
	if err := store.AcquireLease(ctx, l, undoLease, ""); err != nil {
		var held *persistence.LeaseHeldError
		if errors.As(err, &held) {
			return fmt.Errorf("%s is in use by crow-acp (pid %d on %s): undo it there (/undo), or stop it first",
				termsafe.Line(id), held.Holder.PID, termsafe.Line(held.Holder.Host))
		}
		return err
	}
	defer store.ReleaseLease(context.WithoutCancel(ctx), id, l.Owner)
	fenced, ok := store.WithFence(l.Fence()).(checkpoint.Store)
	if !ok {
		return errors.New("the store keeps no checkpoints")
	}
	// An undo a killed process left unfinished is reported first.
	pending, err := checkpoint.PendingUndos(ctx, fenced, id)
	if err != nil {
		return err
	}
	for _, r := range pending {
		fmt.Fprint(w.Err, r.Text())
	}
	return fn(fenced)
}
