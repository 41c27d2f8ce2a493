package agent

import (
	"sync"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/provider"
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

	mu     sync.Mutex
	turn   *turn  // the running turn; nil: none (mu)
	budget budget // compaction bookkeeping (mu)
	// items are the Responses API reasoning items of the running turn, by
	// stored message (reasoning_items.go; mu).
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
	// (ctxcache.go; its own lock).
	cache request.ContextCache
	// prompt holds the environment and instruction files the system
	// prompt is built from (sysprompt.go; its own lock).
	prompt promptFacts
}

// session returns the session's state, creating it: the one lookup by id,
// made where a request names the session.
func (a *Agent) session(sessionID string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessionLocked(sessionID)
}

// sessionLocked is session with a.mu held.
func (a *Agent) sessionLocked(sessionID string) *session {
	sess := a.sessions[sessionID]
	if sess == nil {
		sess = &session{id: sessionID}
		a.sessions[sessionID] = sess
	}
	return sess
}

// kept returns the session's state if this process keeps any, without
// creating it (nil: none).
func (a *Agent) kept(sessionID string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[sessionID]
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
func (a *Agent) isOpened(sessionID string) bool {
	sess := a.kept(sessionID)
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
func (a *Agent) runningTurn(sessionID string) *turn {
	if sess := a.kept(sessionID); sess != nil {
		return sess.runningTurn()
	}
	return nil
}

// dropSession frees what the session holds in this process (its MCP
// servers, its bookkeeping) and waits until its servers are closed. The
// stored session stays. A turn that registered meanwhile (a prompt racing
// the close) keeps the state; only its MCP servers go.
func (a *Agent) dropSession(sessionID string) {
	a.mu.Lock()
	sess := a.sessions[sessionID]
	if sess == nil {
		a.mu.Unlock()
		return
	}
	sess.mu.Lock()
	if sess.turn == nil {
		delete(a.sessions, sessionID)
	}
	set := sess.mcp
	sess.mcp = nil
	sess.mu.Unlock()
	a.mu.Unlock()
	sess.release(set)
}

// dropAll drops every session's state (Agent.Close). A turn still running
// keeps its session's state (it can still be cancelled); only its MCP
// servers go.
func (a *Agent) dropAll() {
	a.mu.Lock()
	sets := make(map[*session]*tool.MCPSet, len(a.sessions))
	for id, sess := range a.sessions {
		sess.mu.Lock()
		sets[sess] = sess.mcp
		sess.mcp = nil
		if sess.turn == nil {
			delete(a.sessions, id)
		}
		sess.mu.Unlock()
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for sess, set := range sets {
		wg.Add(1)
		request.GoSafe(a.log, "closing MCP servers", func() {
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
