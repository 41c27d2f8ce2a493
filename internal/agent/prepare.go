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

// budget is a session's compaction state. It is only bookkeeping: losing it
// (a restart) costs precision, never data.
type budget struct {
	failures  int   // consecutive failed automatic compactions (the breaker)
	turn      *turn // the turn that already compacted automatically
	sent      []int64
	estimated int // our count of the last request
	reported  int // the provider's prompt_tokens for it (0: not reported)
	// window caps the window windowTurn's requests are measured
	// against: the one its endpoint named when it refused a request
	// (recoverOverflow), remembered or not.
	window     int
	windowTurn *turn
}

// turnWindow is the window the running turn's requests are measured
// against after its endpoint refused one (0: none).
func (sess *session) turnWindow() int {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if b := &sess.budget; b.windowTurn != nil && b.windowTurn == sess.turn {
		return b.window
	}
	return 0
}

// prepareContext returns the messages for the next model request, rebuilt
// from the store. It runs before every model request, including between
// tool iterations of one turn: when the request would pass the compaction
// threshold it compacts first, and when it cannot fit it fails with an
// error that says why instead of sending a request the model would reject.
func (a *builder) prepareContext(ctx context.Context, sess *session, s *persistence.Session) ([]provider.Message, error) {
	m := a.meterFor(s).Within(sess.turnWindow())
	view, err := a.activeView(ctx, sess, m.Counter)
	if err != nil {
		return nil, storeError("build context", err)
	}
	fixed := a.fixedTokens(sess, s, m.Counter)
	entries := sess.cache.RequestEntries(m.Counter, a.systemPrompt(sess, s), view)
	if entries, err = a.checkBudget(ctx, sess, s, m, view, entries, fixed); err != nil {
		return nil, err
	}
	sess.remember(entries, fixed)
	sess.withReasoningItems(entries)
	return request.MessagesOf(entries), nil
}

// meterFor returns the meter of the session's current model. A model whose
// window is only assumed gets Window 0: no automatic compaction.
func (a *core) meterFor(s *persistence.Session) request.Meter {
	model := a.sessionModel(s)
	st := a.compact
	st.Window, st.OutputReserve = model.ContextWindow, model.OutputReserve
	if model.WindowAssumed {
		st.Window, st.OutputReserve = 0, 0
	}
	return request.Meter{Model: model, Counter: a.counterFor(model), Settings: st}
}

// counterFor returns the (cached) token counter of a model.
func (a *core) counterFor(m request.Model) compaction.Counter {
	key := m.Name + "\x00" + m.Tokenizer
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.counters[key]; c != nil {
		return c
	}
	c, err := compaction.NewCounter(m.Name, m.Tokenizer)
	if err != nil {
		a.log.Warn("unknown tokenizer; counting with the estimator", zap.String("model", m.Name), zap.Error(err))
		c = compaction.Estimator{}
	}
	a.counters[key] = c
	return c
}

// remember notes what the next request contains, so the provider's usage
// report for it can be matched to it.
func (sess *session) remember(entries []request.ContextEntry, fixed int) {
	ids := make([]int64, 0, len(entries))
	total := fixed
	for _, e := range entries[1:] {
		ids = append(ids, e.MessageID)
		total += e.Tokens
	}
	sess.mu.Lock()
	b := &sess.budget
	b.sent, b.estimated, b.reported = ids, total, 0
	sess.mu.Unlock()
}

// observeUsage records the provider's prompt_tokens for the request just
// made: it is the truth about what was sent.
func (sess *session) observeUsage(res *provider.Result) {
	if res == nil || res.Usage == nil || res.Usage.PromptTokens <= 0 {
		return
	}
	sess.mu.Lock()
	sess.budget.reported = res.Usage.PromptTokens
	sess.mu.Unlock()
}

// measure returns the size of the next request: the provider's count of
// the last request when the view still starts with what was sent, plus our
// count of what is new; otherwise our count. ratio is reported/estimated of
// the last request (1 without a report), used to scale the budget the
// pipeline plans with.
func (sess *session) measure(entries []request.ContextEntry, fixed int) (used int, ratio float64) {
	est := fixed
	for _, e := range entries[1:] {
		est += e.Tokens
	}
	sess.mu.Lock()
	b := &sess.budget
	sent, estimated, reported := b.sent, b.estimated, b.reported
	sess.mu.Unlock()
	if reported == 0 || estimated == 0 {
		return est, 1
	}
	ratio = min(max(float64(reported)/float64(estimated), 0.5), 3)
	if len(entries)-1 >= len(sent) {
		prefix := true
		for i, id := range sent {
			if entries[i+1].MessageID != id {
				prefix = false
				break
			}
		}
		if prefix {
			return reported + (est - estimated), ratio
		}
	}
	return int(float64(est) * ratio), ratio
}

// checkBudget compacts the view when the request would pass the threshold
// (entries are the view's request messages) and returns the messages of
// the request to send, with every guard: auto-compaction off → an error only when it does not
// fit; at most one automatic compaction per turn; a breaker after
// MaxFailures failures; the stall guard (in the pipeline).
func (a *builder) checkBudget(ctx context.Context, sess *session, s *persistence.Session, m request.Meter, view []persistence.Message, entries []request.ContextEntry, fixed int) ([]request.ContextEntry, error) {
	st := m.Settings
	if st.Window <= 0 {
		return entries, nil // window unknown: nothing to measure against (warned at start)
	}
	if fixed > st.Budget() {
		return nil, overflow(m, fixed, fmt.Sprintf("the system prompt and tool schemas alone need %d tokens; %s", fixed, m.WindowFix(a.cfg.NoTools, fixed, fixed)))
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
	b := &sess.budget
	cur := sess.turn
	failures, sameTurn := b.failures, cur != nil && b.turn == cur
	if !sameTurn && failures < st.MaxFailures {
		b.turn = cur
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

	res, err := a.runCompaction(ctx, sess, s, m, view, fixed, ratio, compactOpts{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sess.mu.Lock()
		b.failures++
		sess.mu.Unlock()
		nv, verr := a.activeView(ctx, sess, m.Counter)
		if verr != nil {
			return nil, storeError("build context", verr)
		}
		nentries := request.ContextMessages(m.Counter, a.systemPrompt(sess, s), nv)
		after, _ := sess.measure(nentries, fixed)
		if after <= st.Budget() {
			return nentries, nil // over the threshold but it fits: go on, the failure is reported
		}
		if request.FitsWindow(st, after) {
			// Over the budget, but the window holds it with room for a
			// shorter reply: send it rather than call the window full.
			a.log.Info("compaction could not bring the request under the budget; sending it, it fits the window",
				zap.String("session", s.ID), zap.Int("tokens", after), zap.Int("window", st.Window), zap.Error(err))
			return nentries, nil
		}
		var oe *compaction.OverflowError
		if errors.As(err, &oe) {
			return nil, overflow(m, used, oe.Reason+"; "+m.WindowFix(a.cfg.NoTools, fixed, after))
		}
		return nil, overflow(m, used, "compaction failed: "+err.Error())
	}
	sess.mu.Lock()
	b.failures = 0
	sess.mu.Unlock()
	return request.ContextMessages(m.Counter, a.systemPrompt(sess, s), res), nil
}

// activeView returns the model's current view (active messages only: the
// rebuild never reads compacted history) with token counts made with c,
// counting (and caching in the store) those that are missing or were made
// with another tokenizer. Under the session's lease it is the kept view
// brought up to date; otherwise it is read afresh. The result is shared:
// callers must not change its messages.
func (a *builder) activeView(ctx context.Context, sess *session, c compaction.Counter) ([]persistence.Message, error) {
	sessionID := sess.id
	var view []persistence.Message
	var counted map[int64]int
	var err error
	if sess.holdsLease() {
		view, counted, err = sess.cache.Sync(ctx, a.store, sessionID, c)
	} else if view, err = a.store.Messages(ctx, sessionID, persistence.MessageFilter{ActiveOnly: true}); err == nil {
		counted, err = request.CountView(ctx, c, view)
	}
	if err != nil {
		return nil, err
	}
	if len(counted) > 0 {
		// A cache: a failed write costs a recount next time, nothing else.
		if err := a.writes(sess).SetTokenCounts(context.WithoutCancel(ctx), sessionID, c.Name(), counted); err != nil {
			a.log.Warn("caching token counts", zap.String("session", sessionID), zap.Error(err))
		}
	}
	return view, nil
}

// fixedTokens counts the head every request carries: system prompt and
// tool schemas (kept per session while they and the counter stay).
func (a *builder) fixedTokens(sess *session, s *persistence.Session, c compaction.Counter) int {
	return sess.cache.FixedTokens(c, a.systemPrompt(sess, s), a.toolDefinitions(sess, s))
}

// updateMessage writes m over its stored row and tells the session's kept
// view (whether or not the write failed: it may have been applied). Every
// in-place change of a message goes through it.
func (sess *session) updateMessage(ctx context.Context, store Store, m *persistence.Message) error {
	err := store.UpdateMessage(ctx, m)
	sess.cache.Changed(m.ID)
	return err
}

// rewrite runs write, which changes the session's stored messages in place
// (a compaction, an expand, collapse or delete of one, a repair, a delete
// of the session), and drops the kept view whether or not it failed.
func (sess *session) rewrite(write func() error) error {
	defer sess.cache.Reset()
	return write()
}
