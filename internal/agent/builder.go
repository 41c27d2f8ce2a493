package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"go.uber.org/zap"
)

// activeView returns the model's current view (active messages only: the
// rebuild never reads compacted history) with token counts made with c,
// counting (and caching in the store) those that are missing or were made
// with another tokenizer. Under the session's lease it is the kept view
// brought up to date; otherwise it is read afresh. The result is shared:
// callers must not change its messages.
func (b *builder) activeView(ctx context.Context, sess *session, c compaction.Counter) ([]persistence.Message, error) {
	sessionID := sess.id
	var view []persistence.Message
	var counted map[int64]int
	var err error
	if sess.holdsLease() {
		view, counted, err = sess.cache.Sync(ctx, b.store, sessionID, c)
	} else if view, err = b.store.Messages(ctx, sessionID, persistence.MessageFilter{ActiveOnly: true}); err == nil {
		counted, err = request.CountView(ctx, c, view)
	}
	if err != nil {
		return nil, err
	}
	if len(counted) > 0 {
		// A cache: a failed write costs a recount next time, nothing else.
		if err := b.writes(sess).SetTokenCounts(context.WithoutCancel(ctx), sessionID, c.Name(), counted); err != nil {
			b.log.Warn("caching token counts", zap.String("session", sessionID), zap.Error(err))
		}
	}
	return view, nil
}

// builder builds each model request from the store: the context, its
// budget against the model's window, compaction, the system prompt, usage.
type builder struct {
	*core
	auth *signIn
	// toolDefinitions lists the tools offered to the model (turns'); their
	// schemas count against the window.
	toolDefinitions func(*session, *persistence.Session) []provider.Tool
}
