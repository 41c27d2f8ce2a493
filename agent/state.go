package agent

import (
	"sync"

	"github.com/crow-acp/crow-acp/agent/tool"
	"github.com/crow-acp/crow-acp/streaming"
)

// sessionState is everything this process keeps for one session, in one
// place: created when the session is opened (new, load, resume) or first
// used, dropped by session/close, session/delete and Agent.Close. Dropping
// it frees everything it holds and waits for the goroutines it owns.
//
// The map of states and the fields marked so are guarded by Agent.mu.
type sessionState struct {
	turn   *turn  // the running turn; nil: none (Agent.mu)
	budget budget // compaction bookkeeping (Agent.mu)
	// items are the Responses API reasoning items of the running turn, by
	// stored message (reasoning_items.go; Agent.mu).
	items map[int64][]streaming.ReasoningItem
	mcp   *tool.MCPSet // the session's MCP servers (Agent.mu)
	// opened: this connection created or opened the session, so it may be
	// prompted any time however old (empty.go; Agent.mu).
	opened bool

	// meta serialises read-modify-writes of the stored session (metadata,
	// title), so that a config option set while a turn records its cost
	// does not overwrite either.
	meta sync.Mutex
	// closing counts the replaced MCP sets still being closed in the
	// background; dropping the state waits for them.
	closing sync.WaitGroup
	// cache is the session's active context kept between model requests
	// (ctxcache.go).
	cache contextCache
	// prompt holds the environment and instruction files the system
	// prompt is built from (sysprompt.go; its own lock).
	prompt promptFacts
	// reads is what the model has seen of the session's files, for
	// write_file's read-before-overwrite check (in memory only: after a
	// restart the model reads a file again before overwriting it).
	reads *tool.Reads
}

// readsOf is the session's read tracker, created on first use.
func (a *Agent) readsOf(sessionID string) *tool.Reads {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.stateLocked(sessionID)
	if st.reads == nil {
		st.reads = tool.NewReads()
	}
	return st.reads
}

// stateLocked returns the session's state, creating it. a.mu must be held.
func (a *Agent) stateLocked(sessionID string) *sessionState {
	st := a.sessions[sessionID]
	if st == nil {
		st = &sessionState{}
		a.sessions[sessionID] = st
	}
	return st
}

// state returns the session's state, creating it.
func (a *Agent) state(sessionID string) *sessionState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stateLocked(sessionID)
}

// markOpened records that this connection opened the session.
func (a *Agent) markOpened(sessionID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stateLocked(sessionID).opened = true
}

// isOpened reports whether this connection holds the session open.
func (a *Agent) isOpened(sessionID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.sessions[sessionID]
	return st != nil && st.opened
}

// turnLocked is the session's registered turn, nil when none is. a.mu
// must be held.
func (a *Agent) turnLocked(sessionID string) *turn {
	if st := a.sessions[sessionID]; st != nil {
		return st.turn
	}
	return nil
}

// runningTurn is the session's registered turn, nil when none is.
func (a *Agent) runningTurn(sessionID string) *turn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.turnLocked(sessionID)
}

// dropState frees what the session holds in this process (its MCP servers,
// its bookkeeping) and waits until its servers are closed. The stored
// session stays. A turn that registered meanwhile (a prompt racing the
// close) keeps the state; only its MCP servers go.
func (a *Agent) dropState(sessionID string) {
	a.mu.Lock()
	st := a.sessions[sessionID]
	if st == nil {
		a.mu.Unlock()
		return
	}
	if st.turn == nil {
		delete(a.sessions, sessionID)
	}
	set := st.mcp
	st.mcp = nil
	a.mu.Unlock()
	st.release(set)
}

// dropAll drops every session's state (Agent.Close). A turn still running
// keeps its session's state (it can still be cancelled); only its MCP
// servers go.
func (a *Agent) dropAll() {
	a.mu.Lock()
	sets := make(map[*sessionState]*tool.MCPSet, len(a.sessions))
	for id, st := range a.sessions {
		sets[st] = st.mcp
		st.mcp = nil
		if st.turn == nil {
			delete(a.sessions, id)
		}
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for st, set := range sets {
		wg.Add(1)
		goSafe(a.log, "closing MCP servers", func() {
			defer wg.Done()
			st.release(set)
		})
	}
	wg.Wait()
}

// release closes set (if any) and waits for the closes still running.
func (st *sessionState) release(set *tool.MCPSet) {
	if set != nil {
		set.Close()
	}
	st.closing.Wait()
}
