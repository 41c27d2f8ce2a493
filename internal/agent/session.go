package agent

import (
	"context"
	"sync"
	"time"

	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
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
	budget budget // compaction bookkeeping (mu)
	// items are the Responses API reasoning items of the running turn, by
	// stored message (keepReasoningItems; mu).
	items map[int64][]provider.ReasoningItem
	mcp   *tool.MCPSet // the session's MCP servers (mu)
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
	// cache is the session's active context kept between model requests
	// (request.ContextCache; its own lock).
	cache request.ContextCache
	// prompt holds the environment and instruction files the system
	// prompt is built from (sysprompt.go; its own lock).
	prompt promptFacts
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
		sess = &session{id: sessionID}
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
	sess.items = nil // reasoning items live for their turn only
}

// budget is a session's compaction state. It is only bookkeeping: losing it
// (a restart) costs precision, never data.
type budget struct {
	failures  int   // consecutive failed automatic compactions (the breaker)
	turn      *turn // the turn that already compacted automatically
	sent      []int64
	estimated int // our count of the last request
	reported  int // the provider's prompt_tokens for it (0: not reported)
	// window caps the window windowTurn's requests are measured
	// against: the one its endpoint named when it refused a request
	// (recoverOverflow), remembered or not.
	window     int
	windowTurn *turn
}

// turnWindow is the window the running turn's requests are measured
// against after its endpoint refused one (0: none).
func (sess *session) turnWindow() int {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if b := &sess.budget; b.windowTurn != nil && b.windowTurn == sess.turn {
		return b.window
	}
	return 0
}

// remember notes what the next request contains, so the provider's usage
// report for it can be matched to it.
func (sess *session) remember(entries []request.ContextEntry, fixed int) {
	ids := make([]int64, 0, len(entries))
	total := fixed
	for _, e := range entries[1:] {
		ids = append(ids, e.MessageID)
		total += e.Tokens
	}
	sess.mu.Lock()
	b := &sess.budget
	b.sent, b.estimated, b.reported = ids, total, 0
	sess.mu.Unlock()
}

// observeUsage records the provider's prompt_tokens for the request just
// made: it is the truth about what was sent.
func (sess *session) observeUsage(res *provider.Result) {
	if res == nil || res.Usage == nil || res.Usage.PromptTokens <= 0 {
		return
	}
	sess.mu.Lock()
	sess.budget.reported = res.Usage.PromptTokens
	sess.mu.Unlock()
}

// measure returns the size of the next request: the provider's count of
// the last request when the view still starts with what was sent, plus our
// count of what is new; otherwise our count. ratio is reported/estimated of
// the last request (1 without a report), used to scale the budget the
// pipeline plans with.
func (sess *session) measure(entries []request.ContextEntry, fixed int) (used int, ratio float64) {
	est := fixed
	for _, e := range entries[1:] {
		est += e.Tokens
	}
	sess.mu.Lock()
	b := &sess.budget
	sent, estimated, reported := b.sent, b.estimated, b.reported
	sess.mu.Unlock()
	if reported == 0 || estimated == 0 {
		return est, 1
	}
	ratio = min(max(float64(reported)/float64(estimated), 0.5), 3)
	if len(entries)-1 >= len(sent) {
		prefix := true
		for i, id := range sent {
			if entries[i+1].MessageID != id {
				prefix = false
				break
			}
		}
		if prefix {
			return reported + (est - estimated), ratio
		}
	}
	return int(float64(est) * ratio), ratio
}

// updateMessage writes m over its stored row and tells the session's kept
// view (whether or not the write failed: it may have been applied). Every
// in-place change of a message goes through it.
func (sess *session) updateMessage(ctx context.Context, store Store, m *persistence.Message) error {
	err := store.UpdateMessage(ctx, m)
	sess.cache.Changed(m.ID)
	return err
}

// rewrite runs write, which changes the session's stored messages in place
// (a compaction, an expand, collapse or delete of one, a repair, a delete
// of the session), and drops the kept view whether or not it failed.
func (sess *session) rewrite(write func() error) error {
	defer sess.cache.Reset()
	return write()
}

// keepReasoningItems remembers the items of a reply for its turn.
func (sess *session) keepReasoningItems(messageID int64, items []provider.ReasoningItem) {
	if len(items) == 0 || messageID == 0 {
		return
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.items == nil {
		sess.items = make(map[int64][]provider.ReasoningItem)
	}
	sess.items[messageID] = items
}

// withReasoningItems attaches the turn's reasoning items to the messages of
// a request.
func (sess *session) withReasoningItems(entries []request.ContextEntry) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if len(sess.items) == 0 {
		return
	}
	byMsg := sess.items
	for i := range entries {
		if items, ok := byMsg[entries[i].MessageID]; ok && entries[i].Msg.Role == provider.RoleAssistant {
			entries[i].Msg.ReasoningItems = items
		}
	}
}

// holdsLease reports whether this process holds the session's lease.
func (sess *session) holdsLease() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.lease != nil && !sess.lease.gone
}

// countedUsage is a request's usage by our count: the context we sent (as
// measured when it was built) and the reply.
func (sess *session) countedUsage(c compaction.Counter, res *provider.Result) *provider.Usage {
	sess.mu.Lock()
	prompt := sess.budget.estimated
	sess.mu.Unlock()
	out := c.Count(res.Text) + c.Count(res.Reasoning)
	for _, tc := range res.ToolCalls {
		out += c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	return &provider.Usage{PromptTokens: prompt, CompletionTokens: out, TotalTokens: prompt + out}
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

// promptFacts is what a session's prompt is built from beyond its
// settings: the environment and the project instruction files. It is
// gathered once per session in this process (again only when the session
// directory or the tier changes), so the prompt stays a stable prefix.
type promptFacts struct {
	mu      sync.Mutex
	cwd     string
	tier    sysprompt.Tier
	ready   bool
	date    time.Time // kept across regathering: the session's start here
	env     *probe
	loader  *sysprompt.Loader
	initial []sysprompt.Instruction // root down to the session directory
	nested  []sysprompt.Instruction // folders below it, as the model touched them
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

// probe is a session's environment (sysprompt.Probe), read on a goroutine
// of its own with its own bounded context: the git status of the full tier
// takes up to sysprompt.GitTimeout, which neither the request that opened
// the session (answered already, its context ended) nor the requests
// queued behind it should wait for. The first prompt waits for it.
type probe struct {
	done chan struct{}
	env  sysprompt.Env // set before done is closed
}

// wait is the environment, once read.
func (p *probe) wait() sysprompt.Env {
	<-p.done
	return p.env
}
