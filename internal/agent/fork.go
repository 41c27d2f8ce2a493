package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Forking (session/fork, /fork): a new session whose history is the
// source's as it stands — every message with the compaction state
// (summaries, pruned output and the originals behind them) — and whose
// mode, model, config options, system prompt and loaded instruction files
// are the source's. The store copies the rows under new ids
// (persistence.Forker), so the two share nothing and each goes on alone.
//
// A fork is taken between turns only: session/fork takes the source's
// lease for the copy, so it is refused while a turn runs in the source,
// in this process or another (a half-written turn would be copied as a
// reply nobody finishes). /fork runs as a turn of the source, which holds
// that lease already and has stored nothing of its own: its fork ends at
// the last finished turn.

// forkOrigin, kept in a fork's metadata, is where it came from.
type forkOrigin struct {
	SessionID string    `json:"sessionId"`
	At        time.Time `json:"at"`
}

// ForkedFrom is the session s was forked from and when, for listings;
// ok is false for a session that is not a fork.
func ForkedFrom(s *persistence.Session) (sessionID string, at time.Time, ok bool) {
	var m struct {
		ForkedFrom *forkOrigin `json:"forkedFrom"`
	}
	if len(s.Metadata) == 0 || json.Unmarshal(s.Metadata, &m) != nil || m.ForkedFrom == nil || m.ForkedFrom.SessionID == "" {
		return "", time.Time{}, false
	}
	return m.ForkedFrom.SessionID, m.ForkedFrom.At, true
}

// forker is the store's session copy, nil when the store has none (then
// fork is neither advertised nor offered as a command). It is found
// beneath the context cache's wrapper: a fork writes a new session, of
// which nothing is cached.
func (a *lifecycle) forker() persistence.Forker {
	f, _ := a.store.(persistence.Forker)
	return f
}

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

// turnRunning reports whether a turn of the session is still at work. A
// turn that has answered its prompt only has its answer to write: that
// is waited for, so a fork sent right after a prompt's answer forks it.
func turnRunning(ctx context.Context, sess *session) (bool, error) {
	for {
		sess.mu.Lock()
		t := sess.turn
		answered := t != nil && t.answered
		sess.mu.Unlock()
		switch {
		case t == nil:
			return false, nil
		case !answered:
			return true, nil
		}
		select {
		case <-t.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// forkFrom copies the session into a new one, its writes fenced by the
// source's lease (held by the caller). The fork keeps the
// source's cwd, title and metadata, except its cost (the source's spending
// stays the source's), a child's link to its subagent parent (and the
// subagent instructions) and what adjust changes.
func (a *lifecycle) forkFrom(ctx context.Context, from *session, adjust func(s *persistence.Session, m *sessionMeta)) (*persistence.Session, persistence.ForkStats, error) {
	srcID := from.id
	f, _ := a.writes(from).(persistence.Forker)
	if f == nil {
		return nil, persistence.ForkStats{}, acp.InternalError("This session store cannot copy sessions, so forking is not available.")
	}
	src, err := a.store.GetSession(ctx, srcID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, persistence.ForkStats{}, unknownSession(srcID)
	}
	if err != nil {
		return nil, persistence.ForkStats{}, storeError("fork session", err)
	}
	m := decodeMeta(src.Metadata)
	m.Cost = nil
	if m.Subagent != nil {
		// A fork of a subagent's child is the user's own session: listed,
		// given every tool, and not deleted with the child's parent.
		m.Subagent = nil
		if m.SystemPrompt != nil && m.SystemPrompt.Text == subagentInstructions {
			m.SystemPrompt = nil
		}
	}
	fork := &persistence.Session{ID: newID("sess_"), Cwd: src.Cwd, Title: src.Title}
	if adjust != nil {
		adjust(fork, &m)
	}
	m.ForkedFrom = &forkOrigin{SessionID: src.ID, At: a.cfg.Now().UTC().Truncate(time.Millisecond)}
	fork.Metadata = encodeMeta(m)
	st, err := f.ForkSession(context.WithoutCancel(ctx), src.ID, fork)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, st, unknownSession(srcID)
	}
	if err != nil {
		return nil, st, storeError("fork session", err)
	}
	a.log.Info("session forked", zap.String("session", fork.ID), zap.String("from", src.ID),
		zap.Int("messages", st.Messages), zap.Int64("lastSeq", st.LastSeq))
	return fork, st, nil
}

// forkCommand is /fork, for clients without a fork button: the session is
// copied as it stands (its finished turns) and the user told the new id.
var forkCommand = slashCommand{
	name:        "fork",
	description: "Copy this conversation into a new session (history, mode, model and settings) to try another way there; this one goes on unchanged",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, _ string) (acp.StopReason, error) {
		fork, st, err := a.lifecycle.forkFrom(ctx, sess, nil)
		if err != nil {
			return "", err
		}
		// The frame log has the command in the source's stream; the
		// fork's starts, as after session/fork, with its creation.
		a.record(ctx, fork.ID, persistence.EventSessionCreated, map[string]any{"forkedFrom": s.ID, "via": "/fork"})
		text := fmt.Sprintf("[Forked into session %s (%d messages copied). Open it from your editor's session history, "+
			"or read it with `crow-acp sessions show %s`. This session goes on unchanged.]\n\n", fork.ID, st.Messages, fork.ID)
		a.sendUpdate(ctx, sess, acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(text)}})
		return acp.StopEndTurn, nil
	},
}

// forkCapability is sessionCapabilities.fork: advertised only when the
// store can copy sessions.
func (a *lifecycle) forkCapability() *acp.Marker {
	if a.forker() == nil {
		return nil
	}
	return &acp.Marker{}
}
