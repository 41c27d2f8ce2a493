package agent

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

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
	a.sweepEmpty(ctx, empty)
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
	sess, s, err := a.reopen(ctx, req.SessionID, req.Cwd, req.McpServers, req.AdditionalDirectories, sp)
	if err != nil {
		return nil, err
	}
	a.connectMCP(sess, req.McpServers) // in the background: resume stays fast
	a.log.Info("session resumed", zap.String("session", s.ID))
	a.afterOpen(ctx, sess, s)
	// For the frame log: the resume's frames, and the updates after its
	// response, make one session_loaded event (as a load's do).
	acp.AfterResponse(ctx, func() { a.record(ctx, s.ID, persistence.EventSessionLoaded, map[string]any{}) })
	meta := decodeMeta(s.Metadata)
	return &acp.ResumeSessionResponse{Modes: modeState(meta.Mode), ConfigOptions: a.configOptions(meta)}, nil
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
	if err := a.stopTurn(ctx, req.SessionID); err != nil {
		return nil, err
	}
	a.dropSession(req.SessionID)
	a.log.Info("session closed", zap.String("session", req.SessionID))
	return &acp.CloseSessionResponse{}, nil
}

// DeleteSession stops the session's turn and removes the session with all
// its messages and compaction records from the store. Unknown ids succeed:
// the result the client wants (no such session) already holds.
func (a *Agent) DeleteSession(ctx context.Context, req *acp.DeleteSessionRequest) (*acp.DeleteSessionResponse, error) {
	if err := a.stopTurn(ctx, req.SessionID); err != nil {
		return nil, err
	}
	if err := a.deleteChildren(context.WithoutCancel(ctx), req.SessionID); err != nil {
		return nil, storeError("delete the session's subagent sessions", err)
	}
	a.dropSession(req.SessionID)
	if err := a.deleteStored(context.WithoutCancel(ctx), req.SessionID); err != nil {
		return nil, storeError("delete session", err)
	}
	a.log.Info("session deleted", zap.String("session", req.SessionID))
	return &acp.DeleteSessionResponse{}, nil
}

// deleteStored deletes the stored session; state this process still keeps
// for it (a prompt that raced the delete) drops its kept view.
func (a *Agent) deleteStored(ctx context.Context, sessionID string) error {
	del := func() error { return a.store.DeleteSession(ctx, sessionID) }
	if sess := a.kept(sessionID); sess != nil {
		return sess.rewrite(del)
	}
	return del()
}

// stopTurn cancels the session's running turn, if any, and waits for it to
// end. The turn only waits on things that end with its context (the model
// stream, client calls), so this returns promptly.
func (a *Agent) stopTurn(ctx context.Context, sessionID string) error {
	t := a.runningTurn(sessionID)
	if t == nil {
		return nil
	}
	t.cancel()
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
