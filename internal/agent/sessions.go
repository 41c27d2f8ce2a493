package agent

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

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
	s := &persistence.Session{ID: request.NewID("sess_"), Cwd: req.Cwd, Metadata: encodeMeta(meta)}
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
	seed := sess.req.Cache.Ticket(sess.holdsLease())
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
	acp.AfterResponse(ctx, func() { a.build.CompactOnLoad(context.WithoutCancel(ctx), &sess.req, s, msgs, seed) })
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

// ForkSession answers session/fork. The client opens the fork with the
// response: its history is not replayed (the client has it from the
// source, as with claude-agent-acp and codex-acp); session/load on the new
// id replays it.
func (a *Agent) ForkSession(ctx context.Context, req *acp.ForkSessionRequest) (*acp.ForkSessionResponse, error) {
	sp, err := parseClientPrompt(req.SystemPrompt)
	if err != nil {
		return nil, err
	}
	if _, err := a.store.GetSession(ctx, req.SessionID); errors.Is(err, persistence.ErrNotFound) {
		return nil, unknownSession(req.SessionID)
	} else if err != nil {
		return nil, storeError("fork session", err)
	}
	src := a.sessions.get(req.SessionID)
	running, err := turnRunning(ctx, src)
	if err != nil {
		return nil, err
	}
	if running {
		return nil, acp.InvalidRequest("A prompt is running in session %s: wait for it to end (or send session/cancel), then fork it; a fork copies finished turns only.", req.SessionID)
	}
	err = a.leases.hold(ctx, src, nil)
	if errors.Is(err, errHeldHere) {
		return nil, acp.InvalidRequest("Session %s is being written in this process (a compaction after it was opened): fork it again in a moment.", req.SessionID)
	}
	if err != nil {
		return nil, storeError("fork session", err) // another process's turn: its -32600 as it is
	}
	defer a.leases.release(ctx, src)
	fork, _, err := a.lifecycle.forkFrom(ctx, src, func(s *persistence.Session, m *sessionMeta) {
		s.Cwd = req.Cwd
		m.McpServers = maskServers(req.McpServers)
		m.AdditionalDirectories = req.AdditionalDirectories
		if sp != nil {
			m.SystemPrompt = sp
		}
	})
	if err != nil {
		return nil, err
	}
	forked := a.sessions.get(fork.ID)
	forked.markOpened()
	a.turns.connectMCP(forked, req.McpServers) // in the background, as for session/new
	a.lifecycle.afterOpen(ctx, forked, fork)
	meta := decodeMeta(fork.Metadata)
	return &acp.ForkSessionResponse{SessionID: fork.ID, Modes: modeState(meta.Mode), ConfigOptions: a.lifecycle.configOptions(meta)}, nil
}

// ArchiveSession hides the session from session/list. As the protocol
// asks, an open session is first closed: its turn cancelled and awaited,
// what this process holds for it freed. Archiving twice succeeds.
func (a *Agent) ArchiveSession(ctx context.Context, req *acp.ArchiveSessionRequest) (*acp.ArchiveSessionResponse, error) {
	if _, err := a.store.GetSession(ctx, req.SessionID); err != nil {
		return nil, a.metaError("archive the session", req.SessionID, err)
	}
	if err := a.sessions.stopTurn(ctx, req.SessionID); err != nil {
		return nil, err
	}
	if err := a.lifecycle.setArchived(ctx, req.SessionID, true); err != nil {
		return nil, err
	}
	a.sessions.drop(req.SessionID)
	a.log.Info("session archived", zap.String("session", req.SessionID))
	return &acp.ArchiveSessionResponse{}, nil
}

// UnarchiveSession lists the session again.
func (a *Agent) UnarchiveSession(ctx context.Context, req *acp.UnarchiveSessionRequest) (*acp.UnarchiveSessionResponse, error) {
	if err := a.lifecycle.setArchived(ctx, req.SessionID, false); err != nil {
		return nil, err
	}
	a.log.Info("session unarchived", zap.String("session", req.SessionID))
	return &acp.UnarchiveSessionResponse{}, nil
}

// SetSessionTitle stores the user's title; from then on no generated title
// replaces it. The session need not be open here.
func (a *Agent) SetSessionTitle(ctx context.Context, req *acp.SetSessionTitleRequest) (*acp.SetSessionTitleResponse, error) {
	title := NormalizeTitle(req.Title)
	if title == "" {
		return nil, acp.InvalidParams("The title is empty once control characters and spaces are removed: pass the session's new name.")
	}
	sess := a.sessions.get(req.SessionID)
	s, err := a.updateMeta(ctx, sess, func(s *persistence.Session, m *sessionMeta) {
		s.Title = title
		m.TitleByUser = true
	})
	if err != nil {
		return nil, a.metaError("set the session title", req.SessionID, err)
	}
	a.log.Info("session retitled", zap.String("session", s.ID))
	if sess.isOpened() { // updates go only to a connection that has the session open
		updated := isoTime(s.UpdatedAt)
		acp.AfterResponse(ctx, func() {
			a.sendUpdate(ctx, sess, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionInfoUpdate{Title: &s.Title, UpdatedAt: &updated}})
		})
	}
	return &acp.SetSessionTitleResponse{Title: s.Title}, nil
}

// SetSessionMode switches the session's mode, persists it and confirms it
// with current_mode_update.
func (a *Agent) SetSessionMode(ctx context.Context, req *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	if !validMode(req.ModeID) {
		ids := make([]string, len(sessionModes))
		for i, m := range sessionModes {
			ids[i] = m.ID
		}
		return nil, acp.InvalidParams("Unknown mode %q: use one of %s.", req.ModeID, strings.Join(ids, ", "))
	}
	sess := a.sessions.get(req.SessionID)
	if err := a.lifecycle.setMode(ctx, sess, req.ModeID); err != nil {
		return nil, err
	}
	// Clients that show config options see the mode selector move too.
	if s, err := a.store.GetSession(ctx, req.SessionID); err == nil {
		a.sendUpdate(ctx, sess, acp.SessionUpdate{ConfigOptionUpdate: &acp.ConfigOptionUpdate{
			ConfigOptions: a.lifecycle.configOptions(decodeMeta(s.Metadata))}})
	}
	return &acp.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption changes one option, persists it with the session
// and answers with the full list.
func (a *Agent) SetSessionConfigOption(ctx context.Context, req *acp.SetSessionConfigOptionRequest) (*acp.SetSessionConfigOptionResponse, error) {
	var opt *configOption
	for _, o := range a.lifecycle.configOptionList() {
		if o.id == req.ConfigID {
			opt = &o
			break
		}
	}
	if opt == nil {
		return nil, acp.InvalidParams("Unknown config option %q: the session's configOptions list the ids it accepts.", req.ConfigID)
	}
	value, err := req.StringValue()
	if err != nil {
		return nil, err
	}
	valid := false
	for _, v := range opt.values(a.core) {
		valid = valid || v.Value == value
	}
	if !valid {
		return nil, acp.InvalidParams("Config option %q has no value %q; pick one of its listed values.", req.ConfigID, value)
	}
	persistCtx := context.WithoutCancel(ctx)
	sess := a.sessions.get(req.SessionID)
	err = opt.set(persistCtx, a, sess, value)
	var s *persistence.Session
	if err == nil {
		s, err = a.store.GetSession(persistCtx, req.SessionID)
	}
	var acpErr *acp.Error
	switch {
	case errors.As(err, &acpErr):
		return nil, err
	case errors.Is(err, persistence.ErrNotFound):
		return nil, unknownSession(req.SessionID)
	case err != nil:
		return nil, storeError("set config option", err)
	}
	if opt.id == configModel {
		// The context meter's window changes with the model.
		if u := a.build.LastUsage(s); u != nil {
			acp.AfterResponse(ctx, func() { a.sendUpdate(ctx, sess, acp.SessionUpdate{UsageUpdate: u}) })
		}
	}
	a.log.Info("config option set", zap.String("session", s.ID), zap.String("option", opt.id), zap.String("value", value))
	return &acp.SetSessionConfigOptionResponse{ConfigOptions: a.lifecycle.configOptions(decodeMeta(s.Metadata))}, nil
}

var _ acp.ModeSetter = (*Agent)(nil)
