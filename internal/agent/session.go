package agent

import (
	"context"
	"sync"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"go.uber.org/zap"
)

// session is everything this process keeps for one session, in one place
// and behind its own lock: created when the session is opened (new, load,
// resume) or first used, dropped by session/close, session/delete and
// Agent.Close. Dropping it frees everything it holds and waits for the
// goroutines it owns. A request looks its session up once (Agent.session)
// and passes the *session on; nothing else is keyed by session id.
//
// Lock order: Agent.mu (the map of sessions) before session.mu. The fields
// marked (mu) are guarded by mu.
type session struct {
	id string

	mu   sync.Mutex
	turn *turn // the running turn; nil: none (mu)
	// undone are the reports of undos a killed process left unfinished,
	// found when the session was opened, not yet shown (mu; undo.go).
	undone []*checkpoint.Report
	mcp    *tool.MCPSet // the session's MCP servers (mu)
	// opened: this connection created or opened the session, so it may be
	// prompted any time however old (empty.go; mu).
	opened bool
	// reads is what the model has seen of the session's files, for
	// write_file's read-before-overwrite check (in memory only: after a
	// restart the model reads a file again before overwriting it; mu).
	reads *tool.Reads
	// lease is the session's lease while this process holds it: when it
	// was taken, its fence, what to abort when it is lost (lease.go; mu).
	lease *heldLease
	// unfinished are the replies a storage fault left "streaming", by
	// message id, written again until the store takes them; retrying: a
	// goroutine does that (unfinished.go; mu).
	unfinished map[int64]*unfinishedReply
	retrying   bool

	// meta serialises read-modify-writes of the stored session (metadata,
	// title), so that a config option set while a turn records its cost
	// does not overwrite either.
	meta sync.Mutex
	// closing counts the replaced MCP sets still being closed in the
	// background; dropping the session waits for them.
	closing sync.WaitGroup
	// req is what building its model requests keeps between them: the
	// budget, the kept view of the context, the system prompt's facts
	// (request.Session; its own lock).
	req request.Session
}

// newSession is the state of a session this process starts keeping.
func newSession(id string) *session {
	sess := &session{id: id}
	sess.req = request.Session{ID: id, Holder: sess}
	return sess
}

// sessionTable is what this process keeps per session, by id.
type sessionTable struct {
	mu sync.Mutex
	m  map[string]*session
}

// get returns the session's state, creating it: the one lookup by id,
// made where a request names the session.
func (t *sessionTable) get(sessionID string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.getLocked(sessionID)
}

// getLocked is get with t.mu held.
func (t *sessionTable) getLocked(sessionID string) *session {
	sess := t.m[sessionID]
	if sess == nil {
		sess = newSession(sessionID)
		t.m[sessionID] = sess
	}
	return sess
}

// kept returns the session's state if this process keeps any, without
// creating it (nil: none).
func (t *sessionTable) kept(sessionID string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[sessionID]
}

// fileReads is the session's read tracker, created on first use.
func (sess *session) fileReads() *tool.Reads {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.reads == nil {
		sess.reads = tool.NewReads()
	}
	return sess.reads
}

// markOpened records that this connection opened the session.
func (sess *session) markOpened() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.opened = true
}

// isOpened reports whether this connection holds the session open.
func (sess *session) isOpened() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.opened
}

// isOpened reports whether this connection holds the session open.
func (t *sessionTable) isOpened(sessionID string) bool {
	sess := t.kept(sessionID)
	return sess != nil && sess.isOpened()
}

// runningTurn is the session's registered turn, nil when none is.
func (sess *session) runningTurn() *turn {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.turn
}

// runningTurn is the session's registered turn, nil when none is (or the
// process keeps nothing for the session).
func (t *sessionTable) runningTurn(sessionID string) *turn {
	if sess := t.kept(sessionID); sess != nil {
		return sess.runningTurn()
	}
	return nil
}

// drop frees what the session holds in this process (its MCP
// servers, its bookkeeping) and waits until its servers are closed. The
// stored session stays. A turn that registered meanwhile (a prompt racing
// the close) keeps the state; only its MCP servers go.
func (t *sessionTable) drop(sessionID string) {
	t.mu.Lock()
	sess := t.m[sessionID]
	if sess == nil {
		t.mu.Unlock()
		return
	}
	sess.mu.Lock()
	if sess.turn == nil {
		delete(t.m, sessionID)
	}
	set := sess.mcp
	sess.mcp = nil
	sess.mu.Unlock()
	t.mu.Unlock()
	sess.release(set)
}

// dropAll drops every session's state (Agent.Close). A turn still running
// keeps its session's state (it can still be cancelled); only its MCP
// servers go.
func (t *sessionTable) dropAll(log *zap.Logger) {
	t.mu.Lock()
	sets := make(map[*session]*tool.MCPSet, len(t.m))
	for id, sess := range t.m {
		sess.mu.Lock()
		sets[sess] = sess.mcp
		sess.mcp = nil
		if sess.turn == nil {
			delete(t.m, id)
		}
		sess.mu.Unlock()
	}
	t.mu.Unlock()
	var wg sync.WaitGroup
	for sess, set := range sets {
		wg.Add(1)
		request.GoSafe(log, "closing MCP servers", func() {
			defer wg.Done()
			sess.release(set)
		})
	}
	wg.Wait()
}

// release closes set (if any) and waits for the closes still running.
func (sess *session) release(set *tool.MCPSet) {
	if set != nil {
		set.Close()
	}
	sess.closing.Wait()
}

// stopTurn cancels the session's running turn, if any, and waits for it to
// end. The turn only waits on things that end with its context (the model
// stream, client calls), so this returns promptly.
func (t *sessionTable) stopTurn(ctx context.Context, sessionID string) error {
	running := t.runningTurn(sessionID)
	if running == nil {
		return nil
	}
	running.cancel()
	select {
	case <-running.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// turn is one running prompt turn.
type turn struct {
	cancel context.CancelFunc
	// muted: the prompt was answered while its work still ran (see
	// Prompt); that work sends no more updates.
	muted bool
	done  chan struct{} // closed once the prompt's answer is written
	// answered: the prompt has its answer; only writing it is left.
	answered bool
	// usage is what the provider reported for the turn's model requests
	// (request.TurnUsage), for the prompt response.
	usage request.TurnUsage
	// subagents is what its task calls started (subagent.go).
	subagents turnSubagents
	// seq is the seq of the turn's prompt message and rec records what its
	// tools change (undo.go); rec is nil when nothing is recorded.
	seq int64
	rec *checkpoint.Recorder
}

// markAnswered records that the turn has its answer; it ends (endTurn) once
// the answer is written.
func (sess *session) markAnswered() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if t := sess.turn; t != nil {
		t.answered = true
	}
}

// muteTurn silences the session's running turn: its prompt is answered.
func (sess *session) muteTurn() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if t := sess.turn; t != nil {
		t.muted = true
	}
}

// turnMuted reports whether the session's running turn was muted.
func (sess *session) turnMuted() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.turn != nil && sess.turn.muted
}

// endTurn ends the session's turn once its answer is written.
func (sess *session) endTurn() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if t := sess.turn; t != nil {
		t.cancel()
		close(t.done)
		sess.turn = nil
	}
	sess.req.EndTurn() // reasoning items live for their turn only
}

// holdsLease reports whether this process holds the session's lease.
func (sess *session) holdsLease() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.lease != nil && !sess.lease.gone
}

// recorder is the running turn's checkpoint recorder and turn, or nil.
func (sess *session) recorder() (*checkpoint.Recorder, int64) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.turn == nil {
		return nil, 0
	}
	return sess.turn.rec, sess.turn.seq
}

// recordChanges sets env's hooks so that every file a tool changes is
// checkpointed first: a checkpoint that cannot be stored refuses the change.
func (sess *session) recordChanges(env *tool.Env, s *persistence.Session) {
	rec, seq := sess.recorder()
	if rec == nil {
		return
	}
	env.BeforeChange = func(ctx context.Context, p tool.Path) error {
		return rec.BeforeChange(context.WithoutCancel(ctx), s, seq, p.Abs)
	}
	env.AfterChange = func(ctx context.Context, p tool.Path) {
		_ = rec.AfterChange(context.WithoutCancel(ctx), s, seq, p.Abs)
	}
}

// snapshotBeforeCommand keeps the work tree before the turn's first
// command; an error is the store's (nothing was recorded).
func (sess *session) snapshotBeforeCommand(ctx context.Context, s *persistence.Session) error {
	rec, seq := sess.recorder()
	if rec == nil {
		return nil
	}
	return rec.SnapshotWorkTree(ctx, s, seq)
}

// unfinishedReply is a reply whose final write failed: final is the reply
// as it ended, marked failed; stored, the row as its last successful write
// left it, marked failed (nil: none).
type unfinishedReply struct {
	final, stored *persistence.Message
	// marked: stored was written, the row no longer says "streaming";
	// final is still written once the store takes it.
	marked bool
}

// turnSubagents is what one turn's task calls have taken: the children
// started, and the model requests set aside for them, which together come
// out of the turn's own cap on model requests (maxModelCalls): 25 task
// calls in one reply once made 25 children and 152 model requests.
type turnSubagents struct {
	started int
	steps   int
}

// runningLocked counts the turns still working (not those only waiting
// to write their answer). t.mu must be held.
func (t *sessionTable) runningLocked() int {
	n := 0
	for _, sess := range t.m {
		sess.mu.Lock()
		if t := sess.turn; t != nil && !t.answered {
			n++
		}
		sess.mu.Unlock()
	}
	return n
}

// heldLease is one lease this agent holds (in its session, under
// session.mu).
type heldLease struct {
	taken time.Time
	fence persistence.Fence
	lost  func(error) // aborts what holds it; nil: nothing to abort
	// gone: the heartbeat found the lease lost. The fence stays until the
	// holder releases it, so what the holder still writes is refused.
	gone bool
}
