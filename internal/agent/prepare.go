package agent

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// prepareContext returns the messages for the next model request, rebuilt
// from the store. It runs before every model request, including between
// tool iterations of one turn: when the request would pass the compaction
// threshold it compacts first, and when it cannot fit it fails with an
// error that says why instead of sending a request the model would reject.
func (b *builder) prepareContext(ctx context.Context, sess *session, s *persistence.Session) ([]provider.Message, error) {
	m := b.meterFor(s).Within(sess.turnWindow())
	view, err := b.activeView(ctx, sess, m.Counter)
	if err != nil {
		return nil, storeError("build context", err)
	}
	fixed := b.fixedTokens(sess, s, m.Counter)
	entries := sess.cache.RequestEntries(m.Counter, b.systemPrompt(sess, s), view)
	if entries, err = b.checkBudget(ctx, sess, s, m, view, entries, fixed); err != nil {
		return nil, err
	}
	sess.remember(entries, fixed)
	sess.withReasoningItems(entries)
	return request.MessagesOf(entries), nil
}

// checkBudget compacts the view when the request would pass the threshold
// (entries are the view's request messages) and returns the messages of
// the request to send, with every guard: auto-compaction off → an error only when it does not
// fit; at most one automatic compaction per turn; a breaker after
// MaxFailures failures; the stall guard (in the pipeline).
func (b *builder) checkBudget(ctx context.Context, sess *session, s *persistence.Session, m request.Meter, view []persistence.Message, entries []request.ContextEntry, fixed int) ([]request.ContextEntry, error) {
	st := m.Settings
	if st.Window <= 0 {
		return entries, nil // window unknown: nothing to measure against (warned at start)
	}
	if fixed > st.Budget() {
		return nil, overflow(m, fixed, fmt.Sprintf("the system prompt and tool schemas alone need %d tokens; %s", fixed, m.WindowFix(b.cfg.NoTools, fixed, fixed)))
	}
	used, ratio := sess.measure(entries, fixed)
	if used <= st.Trigger() {
		return entries, nil
	}
	fits := used <= st.Budget()
	if !st.Auto {
		if fits {
			return entries, nil
		}
		return nil, overflow(m, used, "automatic compaction is off (CROW_AUTO_COMPACT=0); run /compact or start a new session")
	}
	sess.mu.Lock()
	bud := &sess.budget
	cur := sess.turn
	failures, sameTurn := bud.failures, cur != nil && bud.turn == cur
	if !sameTurn && failures < st.MaxFailures {
		bud.turn = cur
	}
	sess.mu.Unlock()
	switch {
	case failures >= st.MaxFailures:
		if fits {
			return entries, nil
		}
		return nil, overflow(m, used, fmt.Sprintf("automatic compaction stopped after %d failed attempts; run /compact or start a new session", failures))
	case sameTurn:
		if fits {
			return entries, nil
		}
		return nil, overflow(m, used, "this turn already compacted once and its own messages no longer fit; send a new prompt to continue")
	}

	res, err := b.runCompaction(ctx, sess, s, m, view, fixed, ratio, compactOpts{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sess.mu.Lock()
		bud.failures++
		sess.mu.Unlock()
		nv, verr := b.activeView(ctx, sess, m.Counter)
		if verr != nil {
			return nil, storeError("build context", verr)
		}
		nentries := request.ContextMessages(m.Counter, b.systemPrompt(sess, s), nv)
		after, _ := sess.measure(nentries, fixed)
		if after <= st.Budget() {
			return nentries, nil // over the threshold but it fits: go on, the failure is reported
		}
		if request.FitsWindow(st, after) {
			// Over the budget, but the window holds it with room for a
			// shorter reply: send it rather than call the window full.
			b.log.Info("compaction could not bring the request under the budget; sending it, it fits the window",
				zap.String("session", s.ID), zap.Int("tokens", after), zap.Int("window", st.Window), zap.Error(err))
			return nentries, nil
		}
		var oe *compaction.OverflowError
		if errors.As(err, &oe) {
			return nil, overflow(m, used, oe.Reason+"; "+m.WindowFix(b.cfg.NoTools, fixed, after))
		}
		return nil, overflow(m, used, "compaction failed: "+err.Error())
	}
	sess.mu.Lock()
	bud.failures = 0
	sess.mu.Unlock()
	return request.ContextMessages(m.Counter, b.systemPrompt(sess, s), res), nil
}
