package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/secret"
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

// NewSession creates a session, persisted before it is announced.
func (a *Agent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	sp, err := parseClientPrompt(req.SystemPrompt)
	if err != nil {
		return nil, err
	}
	meta := sessionMeta{
		McpServers:            maskServers(req.McpServers),
		AdditionalDirectories: req.AdditionalDirectories,
		Model:                 a.cfg.Model,
		Mode:                  ModeFromConfig(a.cfg.DefaultMode),
		SystemPrompt:          sp,
	}
	s := &persistence.Session{ID: newID("sess_"), Cwd: req.Cwd, Metadata: encodeMeta(meta)}
	if err := a.store.CreateSession(ctx, s); err != nil {
		return nil, storeError("create session", err)
	}
	sess := a.sessions.get(s.ID)
	sess.markOpened()
	a.log.Info("session created", zap.String("session", s.ID), zap.String("cwd", s.Cwd))
	a.turns.connectMCP(sess, req.McpServers) // in the background: session/new stays fast
	a.lifecycle.afterOpen(ctx, sess, s)
	return &acp.NewSessionResponse{SessionID: s.ID, Modes: modeState(meta.Mode), ConfigOptions: a.lifecycle.configOptions(meta)}, nil
}

// LoadSession replays the whole stored conversation as session/update
// notifications and only then answers, as the protocol requires.
func (a *Agent) LoadSession(ctx context.Context, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	sp, err := parseClientPrompt(req.SystemPrompt)
	if err != nil {
		return nil, err
	}
	sess, s, err := a.lifecycle.reopen(ctx, req.SessionID, req.Cwd, req.McpServers, req.AdditionalDirectories, sp)
	if err != nil {
		return nil, err
	}
	a.turns.connectMCP(sess, req.McpServers) // in the background: load stays fast
	seed := sess.cache.Ticket(sess.holdsLease())
	msgs, err := a.store.Messages(ctx, s.ID, persistence.MessageFilter{})
	if err != nil {
		return nil, storeError("load session", err)
	}
	if err := a.lifecycle.replay(ctx, s.ID, a.undo.withoutUndone(ctx, s.ID, msgs)); err != nil {
		return nil, err
	}
	// The compaction check counts with the model's tokenizer (whose
	// vocabulary may still have to be built) and may compact: the client
	// does not wait for it. It runs right after the response, before the
	// next message is handled, on the messages just replayed.
	acp.AfterResponse(ctx, func() { a.build.compactOnLoad(context.WithoutCancel(ctx), sess, s, msgs, seed) })
	a.log.Info("session loaded", zap.String("session", s.ID), zap.Int("messages", len(msgs)))
	a.lifecycle.afterOpen(ctx, sess, s)
	// What the replay showed, for the frame log's one event about the
	// load (the replayed frames are not logged again), once the updates
	// after the response are sent: the frame log keeps them in that event.
	loaded := map[string]any{"messages": len(msgs)}
	if len(msgs) > 0 {
		loaded["firstSeq"], loaded["lastSeq"] = msgs[0].Seq, msgs[len(msgs)-1].Seq
	}
	acp.AfterResponse(ctx, func() { a.record(ctx, s.ID, persistence.EventSessionLoaded, loaded) })
	meta := decodeMeta(s.Metadata)
	return &acp.LoadSessionResponse{Modes: modeState(meta.Mode), ConfigOptions: a.lifecycle.configOptions(meta)}, nil
}

// reopen finds a stored session for load or resume and records the root
// directories and MCP servers the client names afresh, and its
// systemPrompt when it sends one (none: the stored one stays).
//
// It first repairs what a dead writer left, under the session's lease for
// a moment; if a turn of another live process holds it, that turn is
// writing and nothing needs repair. If the database cannot be written, the
// session still opens: replaying only reads, and a prompt will say why it
// cannot run.
func (a *lifecycle) reopen(ctx context.Context, id, cwd string, mcp []acp.McpServer, dirs []string, sp *clientPrompt) (*session, *persistence.Session, error) {
	notFound := func() error { return unknownSession(id) }
	sess := a.sessions.get(id)
	if err := a.repairIfAbandoned(ctx, sess); err != nil {
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			return nil, nil, notFound()
		case storageFault(err):
			a.log.Warn("session opened read-only", zap.String("session", id), zap.Error(err))
		default:
			return nil, nil, storeError("open session", err)
		}
	}
	s, err := a.updateMeta(ctx, sess, func(s *persistence.Session, m *sessionMeta) {
		s.Cwd = cwd
		m.McpServers = maskServers(mcp)
		m.AdditionalDirectories = dirs
		if sp != nil {
			m.SystemPrompt = sp
		}
	})
	if storageFault(err) {
		a.log.Warn("open session: cannot save its new cwd", zap.String("session", id), zap.Error(err))
		s, err = a.store.GetSession(ctx, id)
	}
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil, notFound()
	}
	if err != nil {
		return nil, nil, storeError("open session", err)
	}
	sess.markOpened()
	return sess, s, nil
}

// repairIfAbandoned takes the session's lease for a moment when its last
// holder did not release it (a crash, a lost lease): taking it over marks
// the replies that holder left streaming interrupted. A lease released as
// a turn ended, or none, leaves nothing to repair, so a load then writes
// nothing for it (two transactions fewer, and on PostgreSQL no dead row a
// load); a live holder elsewhere is left alone (its turn repairs).
func (a *lifecycle) repairIfAbandoned(ctx context.Context, sess *session) error {
	l, err := a.store.GetLease(ctx, sess.id)
	switch {
	case err == nil && l.Owner == "":
		sess.cache.Released(l.Generation)
		return nil
	case errors.Is(err, persistence.ErrNotFound):
		sess.cache.Released(0)
		return nil
	}
	// A crash may also have left an undo unfinished: reported once the
	// session is open (afterOpen).
	return a.leases.briefly(ctx, sess, func(ctx context.Context) { a.undo.takePendingUndos(ctx, sess) })
}

// storageFault reports whether err is a full or read-only database.
func storageFault(err error) bool {
	return errors.Is(err, persistence.ErrStorageFull) || errors.Is(err, persistence.ErrStorageReadOnly)
}

// afterOpen sends what a client needs once it knows the session (after the
// new/load/resume response): the slash commands that really work here, and
// for a session that has talked to the model, its last context usage, so
// that a reopened session's context meter is right before the next prompt.
func (a *lifecycle) afterOpen(ctx context.Context, sess *session, s *persistence.Session) {
	cmds := a.commands()
	usage := a.build.lastUsage(s)
	acp.AfterResponse(ctx, func() {
		a.build.announceInstructions(ctx, sess, s)
		a.undo.sendPendingUndos(ctx, sess)
		a.sendUpdate(ctx, sess, acp.SessionUpdate{
			AvailableCommandsUpdate: &acp.AvailableCommandsUpdate{AvailableCommands: cmds},
		})
		if usage != nil {
			a.sendUpdate(ctx, sess, acp.SessionUpdate{UsageUpdate: usage})
		}
	})
}

// maskServers is servers as stored with the session: env values and header
// values are credentials, kept in memory for connecting but never stored.
func maskServers(servers []acp.McpServer) []acp.McpServer {
	out := make([]acp.McpServer, len(servers))
	for i, srv := range servers {
		srv.Env = slices.Clone(srv.Env)
		for j := range srv.Env {
			if srv.Env[j].Value != "" {
				srv.Env[j].Value = secret.Mask
			}
		}
		srv.Headers = slices.Clone(srv.Headers)
		for j := range srv.Headers {
			if srv.Headers[j].Value != "" {
				srv.Headers[j].Value = secret.Mask
			}
		}
		out[i] = srv
	}
	return out
}

// ListSessions pages through stored sessions, most recently active first,
// leaving out (and cleaning up) sessions that never had a message (see
// empty.go). The cursor is the store's keyset cursor, opaque to the client.
func (a *Agent) ListSessions(ctx context.Context, req *acp.ListSessionsRequest) (*acp.ListSessionsResponse, error) {
	list, next, empty, err := ListShown(ctx, a.store, persistence.ListSessionsOptions{
		Cwd:    req.Cwd,
		Limit:  a.cfg.ListPageSize,
		Cursor: req.Cursor,
	}, notChild(ArchiveFilter(req.Archived)))
	if errors.Is(err, persistence.ErrInvalidCursor) {
		return nil, acp.InvalidParams("Invalid cursor: pass the nextCursor of a previous session/list response unchanged.")
	}
	if err != nil {
		return nil, storeError("list sessions", err)
	}
	a.lifecycle.sweepEmpty(ctx, empty)
	out := &acp.ListSessionsResponse{Sessions: make([]acp.SessionInfo, 0, len(list)), NextCursor: next}
	for _, s := range list {
		out.Sessions = append(out.Sessions, sessionInfo(&s))
	}
	return out, nil
}

func sessionInfo(s *persistence.Session) acp.SessionInfo {
	m := decodeMeta(s.Metadata)
	return acp.SessionInfo{
		SessionID:             s.ID,
		Cwd:                   s.Cwd,
		AdditionalDirectories: m.AdditionalDirectories,
		Title:                 s.Title,
		UpdatedAt:             isoTime(s.UpdatedAt),
		Archived:              m.Archived,
	}
}

// isoTime is an ISO 8601 UTC timestamp with millisecond precision.
func isoTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// ResumeSession reopens a stored session without replaying its history: the
// client still shows it; the model context comes from the store as always.
func (a *Agent) ResumeSession(ctx context.Context, req *acp.ResumeSessionRequest) (*acp.ResumeSessionResponse, error) {
	sp, err := parseClientPrompt(req.SystemPrompt)
	if err != nil {
		return nil, err
	}
	sess, s, err := a.lifecycle.reopen(ctx, req.SessionID, req.Cwd, req.McpServers, req.AdditionalDirectories, sp)
	if err != nil {
		return nil, err
	}
	a.turns.connectMCP(sess, req.McpServers) // in the background: resume stays fast
	a.log.Info("session resumed", zap.String("session", s.ID))
	a.lifecycle.afterOpen(ctx, sess, s)
	// For the frame log: the resume's frames, and the updates after its
	// response, make one session_loaded event (as a load's do).
	acp.AfterResponse(ctx, func() { a.record(ctx, s.ID, persistence.EventSessionLoaded, map[string]any{}) })
	meta := decodeMeta(s.Metadata)
	return &acp.ResumeSessionResponse{Modes: modeState(meta.Mode), ConfigOptions: a.lifecycle.configOptions(meta)}, nil
}

// CloseSession cancels the session's running turn, waits until the turn has
// answered its prompt and stored what it had, then frees what the session
// holds in this process. The stored session stays: it can be loaded,
// resumed or prompted again.
func (a *Agent) CloseSession(ctx context.Context, req *acp.CloseSessionRequest) (*acp.CloseSessionResponse, error) {
	if _, err := a.store.GetSession(ctx, req.SessionID); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, unknownSession(req.SessionID)
		}
		return nil, storeError("close session", err)
	}
	if err := a.sessions.stopTurn(ctx, req.SessionID); err != nil {
		return nil, err
	}
	a.sessions.drop(req.SessionID)
	a.log.Info("session closed", zap.String("session", req.SessionID))
	return &acp.CloseSessionResponse{}, nil
}

// DeleteSession stops the session's turn and removes the session with all
// its messages and compaction records from the store. Unknown ids succeed:
// the result the client wants (no such session) already holds.
func (a *Agent) DeleteSession(ctx context.Context, req *acp.DeleteSessionRequest) (*acp.DeleteSessionResponse, error) {
	if err := a.sessions.stopTurn(ctx, req.SessionID); err != nil {
		return nil, err
	}
	if err := a.turns.deleteChildren(context.WithoutCancel(ctx), req.SessionID); err != nil {
		return nil, storeError("delete the session's subagent sessions", err)
	}
	a.sessions.drop(req.SessionID)
	if err := a.deleteStored(context.WithoutCancel(ctx), req.SessionID); err != nil {
		return nil, storeError("delete session", err)
	}
	if a.undo.undoing() {
		if err := checkpoint.RemoveTrees(a.cfg.CheckpointTrees, req.SessionID); err != nil {
			a.log.Warn("remove the session's work-tree snapshots", zap.String("session", req.SessionID), zap.Error(err))
		}
	}
	a.log.Info("session deleted", zap.String("session", req.SessionID))
	return &acp.DeleteSessionResponse{}, nil
}

// deleteStored deletes the stored session; state this process still keeps
// for it (a prompt that raced the delete) drops its kept view.
func (a *core) deleteStored(ctx context.Context, sessionID string) error {
	del := func() error { return a.store.DeleteSession(ctx, sessionID) }
	if sess := a.sessions.kept(sessionID); sess != nil {
		return sess.rewrite(del)
	}
	return del()
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

// SessionStatus says whether this process holds the session open (a
// connection created, loaded or resumed it and has not closed it) or only
// has it stored. It changes nothing: the state map is read, never filled.
func (a *Agent) SessionStatus(ctx context.Context, req *acp.SessionStatusRequest) (*acp.SessionStatusResponse, error) {
	if a.sessions.isOpened(req.SessionID) {
		return &acp.SessionStatusResponse{Status: acp.SessionOpen}, nil
	}
	if _, err := a.store.GetSession(ctx, req.SessionID); err != nil {
		return nil, a.metaError("read the session's status", req.SessionID, err)
	}
	return &acp.SessionStatusResponse{Status: acp.SessionSaved}, nil
}

var _ acp.SessionStatuser = (*Agent)(nil)
