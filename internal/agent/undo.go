package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// undoing reports whether turns are recorded and can be undone.
func (u *undoer) undoing() bool { return u.cfg.Checkpoints != nil }

// checkpoints is the session's checkpoint store, fenced by its lease; nil
// when undo is off or the lease is not held here.
func (u *undoer) checkpoints(sess *session) checkpoint.Store {
	if u.cfg.Checkpoints == nil {
		return nil
	}
	sess.mu.Lock()
	h := sess.lease
	sess.mu.Unlock()
	if h == nil {
		return nil
	}
	st, _ := u.cfg.Checkpoints.WithFence(h.fence).(checkpoint.Store)
	return st
}

// startRecording makes the running turn record checkpoints: turn is the
// seq of its prompt message. Subagents only read: nothing to record.
func (u *undoer) startRecording(sess *session, s *persistence.Session, turnSeq int64) {
	st := u.checkpoints(sess)
	t := sess.runningTurn()
	if st == nil || t == nil || isSubagent(s) {
		return
	}
	sess.mu.Lock()
	t.seq = turnSeq
	t.rec = &checkpoint.Recorder{Store: st, Trees: u.cfg.CheckpointTrees}
	sess.mu.Unlock()
}

// endRecording records the work tree as the turn left it (when its
// commands were snapshotted before), however the turn ended.
func (u *undoer) endRecording(ctx context.Context, sess *session, s *persistence.Session) {
	rec, seq := sess.recorder()
	if rec == nil {
		return
	}
	if err := rec.EndTurn(ctx, s, seq); err != nil {
		u.log.Warn("record the work tree at the turn's end", zap.String("session", s.ID), zap.Error(err))
	}
}

// takePendingUndos keeps the reports of undos a killed process left
// unfinished, holding the session's lease, for sendPendingUndos.
func (u *undoer) takePendingUndos(ctx context.Context, sess *session) {
	st := u.checkpoints(sess)
	if st == nil {
		return
	}
	reps, err := checkpoint.PendingUndos(ctx, st, sess.id)
	if err != nil {
		u.log.Warn("pending undos", zap.String("session", sess.id), zap.Error(err))
		return
	}
	sess.mu.Lock()
	sess.undone = append(sess.undone, reps...)
	sess.mu.Unlock()
}

// sendPendingUndos shows the reports takePendingUndos kept.
func (u *undoer) sendPendingUndos(ctx context.Context, sess *session) {
	sess.mu.Lock()
	reps := sess.undone
	sess.undone = nil
	sess.mu.Unlock()
	for _, r := range reps {
		u.sendUpdate(ctx, sess, agentText(r.Text()+"\n"))
	}
}

// reportPendingUndos tells the user about undos a killed process left
// unfinished (checkpoint.PendingUndos), holding the session's lease.
func (u *undoer) reportPendingUndos(ctx context.Context, sess *session, _ *persistence.Session) {
	u.takePendingUndos(ctx, sess)
	u.sendPendingUndos(ctx, sess)
}

func agentText(text string) acp.SessionUpdate {
	return acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(text)}}
}

// undoRequest is one /undo, /rewind N or _crow/undo.
type undoRequest struct {
	to     int // prompt number; 0: the last prompt
	dryRun bool
	force  bool
}

// undoResult is what an undo did, with the prompt it went back to.
type undoResult struct {
	report *checkpoint.Report
	prompt checkpoint.Prompt // the first prompt undone
}

// errUndo is a refusal the user can act on (no such prompt, nothing to
// redo): a reply, not a failure of the request.
type errUndo struct{ msg string }

func (e *errUndo) Error() string { return e.msg }

// undo runs an undo in session sess, whose lease this process holds.
func (u *undoer) revert(ctx context.Context, sess *session, s *persistence.Session, r undoRequest) (*undoResult, error) {
	st := u.checkpoints(sess)
	if st == nil {
		return nil, errors.New("undo: the session's lease is not held")
	}
	ps, err := u.prompts(ctx, st, s.ID)
	if err != nil {
		return nil, err
	}
	turnSeq, err := checkpoint.TurnOf(ps, r.to)
	if err != nil {
		return nil, &errUndo{err.Error()}
	}
	res := &undoResult{}
	for _, p := range ps {
		if p.Turn == turnSeq {
			res.prompt = p
		}
	}
	err = sess.req.Rewrite(func() error {
		res.report, err = checkpoint.Undo(ctx, st, s.ID, turnSeq, checkpoint.Options{Trees: u.cfg.CheckpointTrees, DryRun: r.dryRun, Force: r.force})
		return err
	})
	if errors.Is(err, persistence.ErrConflict) {
		return nil, &errUndo{"another undo of this session is unfinished; try again"}
	}
	if err != nil {
		return nil, storeError("undo", err)
	}
	u.contextChanged(sess)
	return res, nil
}

// redo re-applies the session's last undo.
func (u *undoer) redo(ctx context.Context, sess *session, s *persistence.Session, dryRun, force bool) (*checkpoint.Report, error) {
	st := u.checkpoints(sess)
	if st == nil {
		return nil, errors.New("redo: the session's lease is not held")
	}
	var rep *checkpoint.Report
	err := sess.req.Rewrite(func() (err error) {
		rep, err = checkpoint.Redo(ctx, st, s.ID, checkpoint.Options{Trees: u.cfg.CheckpointTrees, DryRun: dryRun, Force: force})
		return err
	})
	switch {
	case errors.Is(err, checkpoint.ErrNothingToRedo):
		return nil, &errUndo{"nothing to redo: the last change of this session is not an undo"}
	case errors.Is(err, persistence.ErrConflict):
		return nil, &errUndo{"nothing to redo: the session has new messages since its undo"}
	case err != nil:
		return nil, storeError("redo", err)
	}
	u.contextChanged(sess)
	return rep, nil
}

// contextChanged forgets what the provider counted of the session's
// context: an undo or redo changed which messages it holds.
func (u *undoer) contextChanged(sess *session) {
	sess.req.Forget()
}

// prompts lists the session's prompts (checkpoint.Prompts).
func (u *undoer) prompts(ctx context.Context, st checkpoint.Store, sessionID string) ([]checkpoint.Prompt, error) {
	src, ok := st.(checkpoint.PromptSource)
	if !ok {
		return nil, errors.New("the store lists no prompts")
	}
	ps, err := checkpoint.Prompts(ctx, src, sessionID)
	if err != nil {
		return nil, storeError("list prompts", err)
	}
	return ps, nil
}

// undoArgs parses "[N] [--force] [--dry-run]".
func undoArgs(input string, number bool) (undoRequest, error) {
	var r undoRequest
	for _, f := range strings.Fields(input) {
		switch {
		case f == "--force":
			r.force = true
		case f == "--dry-run":
			r.dryRun = true
		case number && r.to == 0:
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				return r, fmt.Errorf("%q is not a prompt number (/rewind lists them)", f)
			}
			r.to = n
		default:
			return r, fmt.Errorf("unexpected %q", f)
		}
	}
	return r, nil
}

// reportText is a report for the conversation: the file lines in a code
// block (paths and diffs are the workspace's).
func reportText(head string, rep *checkpoint.Report) string {
	var b strings.Builder
	b.WriteString(head)
	restored, deleted, skipped := rep.Counts()
	fmt.Fprintf(&b, " (%d restored, %d deleted, %d skipped)\n\n", restored, deleted, skipped)
	if t := strings.TrimRight(rep.Text(), "\n"); t != "" {
		b.WriteString(fenced(t))
	}
	return b.String()
}

// fenced puts text in a Markdown code block whose fence no line of it closes.
func fenced(text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + "\n" + text + "\n" + fence + "\n"
}

// promptList is /rewind's list: the prompts the conversation shows, numbered.
func promptList(ps []checkpoint.Prompt) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Undone {
			continue
		}
		line, _, cut := strings.Cut(strings.TrimSpace(p.Text), "\n")
		if r := []rune(line); len(r) > 100 {
			line, cut = string(r[:100]), true
		}
		if cut {
			line += " …"
		}
		fmt.Fprintf(&b, "%d. %s\n", p.Number, markdownLine(line))
	}
	if b.Len() == 0 {
		return "[No prompts to rewind to.]\n"
	}
	return "Prompts (/rewind N goes back to before prompt N):\n\n" + b.String()
}

// markdownLine makes one line of stored or workspace text safe in a
// Markdown reply: terminal controls shown (termsafe), the characters that
// would start code or a table cell escaped.
func markdownLine(s string) string {
	s = termsafe.Line(s)
	r := strings.NewReplacer("\\", "\\\\", "`", "\\`", "|", "\\|", "*", "\\*", "_", "\\_", "<", "&lt;", "[", "\\[")
	return r.Replace(s)
}

// withoutUndone is msgs without the messages an undo hid: a load replays
// the conversation as it now stands (compacted messages, inactive too, are
// still replayed).
func (u *undoer) withoutUndone(ctx context.Context, sessionID string, msgs []persistence.Message) []persistence.Message {
	src, ok := u.cfg.Checkpoints.(interface {
		Undos(ctx context.Context, sessionID string) ([]persistence.Undo, error)
	})
	if !ok {
		return msgs
	}
	undos, err := src.Undos(ctx, sessionID)
	if err != nil {
		u.log.Warn("read the session's undos", zap.String("session", sessionID), zap.Error(err))
		return msgs
	}
	hidden := map[int64]bool{}
	for _, rec := range undos {
		if rec.State == persistence.UndoDone {
			for _, id := range rec.Hidden {
				hidden[id] = true
			}
		}
	}
	if len(hidden) == 0 {
		return msgs
	}
	out := make([]persistence.Message, 0, len(msgs))
	for _, m := range msgs {
		if !m.IsActive && hidden[m.ID] {
			continue
		}
		out = append(out, m)
	}
	return out
}

// undoFileInfo is one file of a report on the wire.
type undoFileInfo struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	Diff   string `json:"diff,omitempty"`
}

// undoReport is a report on the wire: the files, what was not covered,
// and the text /undo shows.
type undoReport struct {
	UndoID     int64          `json:"undoId,omitempty"`
	Redo       bool           `json:"redo,omitempty"`
	DryRun     bool           `json:"dryRun,omitempty"`
	Files      []undoFileInfo `json:"files"`
	NotCovered []string       `json:"notCovered"`
	Text       string         `json:"text"`
}

func reportOf(r *checkpoint.Report) undoReport {
	out := undoReport{UndoID: r.UndoID, Redo: r.Redo, DryRun: r.DryRun, Files: []undoFileInfo{}, NotCovered: []string{}, Text: r.Text()}
	for _, f := range r.Files {
		out.Files = append(out.Files, undoFileInfo{Path: f.Path, Action: f.Action, Reason: f.Reason, Diff: f.Diff})
	}
	out.NotCovered = append(out.NotCovered, r.NotCovered...)
	return out
}

// withUndoLease runs fn with the session's lease held, when no turn runs in
// it here or in another process (like changeCompaction); undos a killed
// process left unfinished are reported first ("pending"). A refusal the
// user can act on (errUndo) is -32600 with its text.
func (u *undoer) withUndoLease(ctx context.Context, sessionID, op string, fn func(*session, *persistence.Session) (any, error)) (any, error) {
	s, err := u.extSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if !u.undoing() {
		return nil, acp.InvalidRequest("Undo is not available: this store keeps no checkpoints.")
	}
	sess := u.sessions.get(s.ID)
	busy := acp.InvalidRequest("A prompt is running in session %s: %s when it ends.", s.ID, op)
	if sess.runningTurn() != nil {
		return nil, busy
	}
	err = u.leases.hold(ctx, sess, nil)
	if errors.Is(err, errHeldHere) {
		return nil, busy
	}
	var leased *leasedError
	if errors.As(err, &leased) {
		return nil, acp.InvalidRequest("Cannot %s now. %s", op, leased.err.Message)
	}
	if err != nil {
		return nil, storeError(op, err)
	}
	defer u.leases.release(ctx, sess)
	pending := []undoReport{}
	if st := u.checkpoints(sess); st != nil {
		reps, err := checkpoint.PendingUndos(ctx, st, s.ID)
		if err != nil {
			return nil, storeError(op, err)
		}
		for _, r := range reps {
			pending = append(pending, reportOf(r))
		}
	}
	out, err := fn(sess, s)
	var refusal *errUndo
	if errors.As(err, &refusal) {
		return nil, acp.InvalidRequest("Cannot %s: %s.", op, refusal.msg)
	}
	if err != nil {
		return nil, err
	}
	res := out.(map[string]any)
	res["pending"] = pending
	return res, nil
}

// undoer records what a turn's tools change and undoes it (undo.go).
type undoer struct{ *core }
