package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
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
func (l *lifecycle) forker() persistence.Forker {
	f, _ := l.store.(persistence.Forker)
	return f
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
func (l *lifecycle) forkFrom(ctx context.Context, from *session, adjust func(s *persistence.Session, m *sessionMeta)) (*persistence.Session, persistence.ForkStats, error) {
	srcID := from.id
	f, _ := l.writes(from).(persistence.Forker)
	if f == nil {
		return nil, persistence.ForkStats{}, acp.InternalError("This session store cannot copy sessions, so forking is not available.")
	}
	src, err := l.store.GetSession(ctx, srcID)
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
	fork := &persistence.Session{ID: request.NewID("sess_"), Cwd: src.Cwd, Title: src.Title}
	if adjust != nil {
		adjust(fork, &m)
	}
	m.ForkedFrom = &forkOrigin{SessionID: src.ID, At: l.cfg.Now().UTC().Truncate(time.Millisecond)}
	fork.Metadata = encodeMeta(m)
	st, err := f.ForkSession(context.WithoutCancel(ctx), src.ID, fork)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, st, unknownSession(srcID)
	}
	if err != nil {
		return nil, st, storeError("fork session", err)
	}
	l.log.Info("session forked", zap.String("session", fork.ID), zap.String("from", src.ID),
		zap.Int("messages", st.Messages), zap.Int64("lastSeq", st.LastSeq))
	return fork, st, nil
}

// forkCapability is sessionCapabilities.fork: advertised only when the
// store can copy sessions.
func (l *lifecycle) forkCapability() *acp.Marker {
	if l.forker() == nil {
		return nil
	}
	return &acp.Marker{}
}
