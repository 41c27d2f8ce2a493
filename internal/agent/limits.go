package agent

import (
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Defaults of the limits in Config.
const (
	// DefaultMaxPromptBytes admits a prompt with a few large files embedded
	// (1 MiB of text is about 250k tokens, beyond most context windows).
	DefaultMaxPromptBytes = 1 << 20
	// DefaultMaxConcurrentTurns bounds the sessions running a prompt at
	// once on one connection.
	DefaultMaxConcurrentTurns = 8
	// DefaultCancelGrace keeps the answer to session/cancel well inside a
	// second even when the turn is stuck in a call that ignores it.
	DefaultCancelGrace = 300 * time.Millisecond
)

// checkPromptSize refuses a prompt larger than the configured cap, before
// anything is stored or sent to the model.
func (a *Agent) checkPromptSize(parts []persistence.Part) error {
	n := 0
	for _, p := range parts {
		n += len(p.Text) + len(p.Data) + len(p.URI) + len(p.Name)
	}
	if limit := a.cfg.MaxPromptBytes; n > limit {
		e := acp.InvalidParams("The prompt is too large: %d bytes, the limit is %d (setting limits.prompt_bytes, env CROW_MAX_PROMPT_BYTES); nothing was stored.", n, limit)
		e.Data = map[string]any{"limit": limit, "size": n}
		return e
	}
	return nil
}

// runningTurnsLocked counts the turns still working (not those only waiting
// to write their answer). a.mu must be held.
func (a *Agent) runningTurnsLocked() int {
	n := 0
	for _, sess := range a.sessions {
		sess.mu.Lock()
		if t := sess.turn; t != nil && !t.answered {
			n++
		}
		sess.mu.Unlock()
	}
	return n
}

// tooManyTurns is the error for a prompt over the concurrency cap.
func (a *Agent) tooManyTurns() error {
	limit := a.cfg.MaxConcurrentTurns
	e := acp.InvalidRequest("Too many sessions are running a prompt: the limit is %d at once (setting limits.active_sessions, env CROW_MAX_CONCURRENT_SESSIONS); wait for one to finish or cancel it.", limit)
	e.Data = map[string]any{"limit": limit}
	return e
}
