package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
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
func (a *Agent) prepareContext(ctx context.Context, sess *session, s *persistence.Session) ([]provider.Message, error) {
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
func (a *Agent) meterFor(s *persistence.Session) request.Meter {
	model := a.sessionModel(s)
	st := a.compact
	st.Window, st.OutputReserve = model.ContextWindow, model.OutputReserve
	if model.WindowAssumed {
		st.Window, st.OutputReserve = 0, 0
	}
	return request.Meter{Model: model, Counter: a.counterFor(model), Settings: st}
}

// counterFor returns the (cached) token counter of a model.
func (a *Agent) counterFor(m request.Model) compaction.Counter {
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
func (a *Agent) checkBudget(ctx context.Context, sess *session, s *persistence.Session, m request.Meter, view []persistence.Message, entries []request.ContextEntry, fixed int) ([]request.ContextEntry, error) {
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

// compactOpts say how a compaction was asked for.
type compactOpts struct {
	manual  bool   // /compact
	focus   string // /compact's input
	noModel bool   // use the deterministic summary (session/load never waits for the model)
}

// runCompaction runs the pipeline on view, applies its plans, tells the
// client, and returns the new view. ratio scales the budget to the
// provider's reported counts.
func (a *Agent) runCompaction(ctx context.Context, sess *session, s *persistence.Session, m request.Meter, view []persistence.Message, fixed int, ratio float64, o compactOpts) ([]persistence.Message, error) {
	st := m.Settings
	planned := st
	if ratio != 1 && st.Window > 0 {
		planned.Window = int(float64(st.Window) / ratio)
		planned.OutputReserve = int(float64(st.Reserve()) / ratio)
	}
	ref := newID("cmp_")
	a.record(ctx, s.ID, persistence.EventCompactionStarted, map[string]any{"ref": ref, "manual": o.manual, "model": m.Model.Name})
	if a.capabilities().SupportsCompaction() {
		a.sendUpdate(ctx, sess, acp.CompactionUpdate{CompactionID: ref, Status: acp.CompactionInProgress}.Update())
	}
	persistCtx := context.WithoutCancel(ctx)
	settings := settingsSnapshot(planned, m.Counter.Name(), ref, o.manual, o.focus)
	x := &compaction.Compactor{
		Counter:   m.Counter,
		Settings:  planned,
		Summarize: a.summarizer(s.ID, m.Model),
		Apply: func(ctx context.Context, p *compaction.Plan) ([]persistence.Message, error) {
			rec := &persistence.Compaction{SessionID: s.ID, Policy: p.Policy, CompactedIDs: p.Compacted, KeptIDs: p.Kept,
				TokensBefore: p.TokensBefore, TokensAfter: p.TokensAfter,
				MessagesBefore: p.MessagesBefore, MessagesAfter: p.MessagesAfter, Settings: settings(p)}
			for _, added := range p.Added {
				added.TokenEncoding = m.Counter.Name()
			}
			if err := sess.rewrite(func() error { return a.writes(sess).Compact(persistCtx, rec, p.Added) }); err != nil {
				return nil, storeError("compact", err)
			}
			a.log.Info("compacted", zap.String("session", s.ID), zap.String("policy", p.Policy),
				zap.Int("tokensBefore", p.TokensBefore), zap.Int("tokensAfter", p.TokensAfter), zap.String("note", p.Note))
			return a.activeView(persistCtx, sess, m.Counter)
		},
	}
	if o.noModel {
		x.Summarize = nil
	}
	res, err := x.Run(ctx, compaction.Request{View: view, Fixed: fixed, Manual: o.manual, Focus: o.focus})
	done := map[string]any{"ref": ref, "tokens": res.Tokens, "policies": policyNames(res.Plans)}
	if err != nil {
		done["error"] = err.Error()
	}
	a.record(context.WithoutCancel(ctx), s.ID, persistence.EventCompactionCompleted, done)
	a.reportCompaction(ctx, sess, s, m, ref, res, ratio, err)
	if err != nil {
		return nil, err
	}
	return a.activeView(ctx, sess, m.Counter)
}

// settingsSnapshot returns the Settings JSON stored with each record.
func settingsSnapshot(st compaction.Settings, tokenizer, ref string, manual bool, focus string) func(*compaction.Plan) json.RawMessage {
	return func(p *compaction.Plan) json.RawMessage {
		b, _ := json.Marshal(struct {
			compaction.Settings
			Tokenizer string `json:"tokenizer"`
			Ref       string `json:"ref"`
			Manual    bool   `json:"manual"`
			Focus     string `json:"focus,omitempty"`
			Note      string `json:"note,omitempty"`
		}{st, tokenizer, ref, manual, focus, p.Note})
		return b
	}
}

// summarizer asks the session's model for a summary, without tools and
// without streaming it to the client.
// Failures that may pass are retried like a turn's requests.
func (a *Agent) summarizer(sessionID string, model request.Model) compaction.Summarizer {
	return func(ctx context.Context, req provider.Request) (string, error) {
		req.Model, req.InlineThink = model.Name, model.InlineThink
		res, _, err := a.streamWithRetry(ctx, a.models.ClientFor(model), sessionID, req, nil)
		if err != nil {
			return "", err
		}
		return res.Text, nil
	}
}

func (a *Agent) capabilities() acp.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clientCaps
}

// reportCompaction tells the client what happened: compaction_update for
// clients that support it, otherwise one short agent message; then the new
// context size as usage_update.
func (a *Agent) reportCompaction(ctx context.Context, sess *session, s *persistence.Session, m request.Meter, ref string, res compaction.Result, ratio float64, err error) {
	if ctx.Err() != nil {
		if a.capabilities().SupportsCompaction() {
			a.sendUpdate(context.WithoutCancel(ctx), sess, acp.CompactionUpdate{CompactionID: ref, Status: acp.CompactionCancelled}.Update())
		}
		return
	}
	caps := a.capabilities()
	var text string
	switch {
	case errors.Is(err, compaction.ErrNothingToCompact) && len(res.Plans) == 0:
		text = "Nothing to compact" + strings.TrimPrefix(err.Error(), compaction.ErrNothingToCompact.Error())
	case err != nil && len(res.Plans) == 0:
		text = "Context compaction failed: " + err.Error()
	case len(res.Plans) == 0:
		text = "Context compaction found nothing it could compact."
	default:
		last := res.Plans[len(res.Plans)-1]
		compacted := 0
		for _, p := range res.Plans {
			compacted += len(p.Compacted)
		}
		text = fmt.Sprintf("Context compacted (%s): %d messages, %d → %d tokens.",
			policyNames(res.Plans), compacted, res.Plans[0].TokensBefore, res.Tokens)
		if last.Note != "" {
			text += " " + last.Note + "."
		}
		if err != nil {
			text += " It is still too large: " + err.Error()
		}
	}
	if caps.SupportsCompaction() {
		u := acp.CompactionUpdate{CompactionID: ref, Status: acp.CompactionCompleted}
		if err != nil {
			msg := text
			u.Status, u.Error = acp.CompactionFailed, &msg
		} else {
			summary := text
			// No plans and no error: over the threshold, but it fits and
			// nothing could be cut (one long turn in a small window).
			if n := len(res.Plans); n > 0 && res.Plans[n-1].Summary != "" {
				summary += "\n\n" + res.Plans[n-1].Summary
			}
			u.Summary = []acp.ContentBlock{acp.TextBlock(summary)}
		}
		a.sendUpdate(ctx, sess, u.Update())
	} else {
		// Its own message: it must not merge into the reply around it.
		a.sendUpdate(ctx, sess, acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock("[" + text + "]\n\n"), MessageID: ref}})
	}
	if len(res.Plans) > 0 && m.Settings.Window > 0 {
		// In the provider's units: our count scaled as its last report was.
		used := int(float64(res.Tokens) * ratio)
		a.sendUpdate(ctx, sess, acp.SessionUpdate{UsageUpdate: &acp.UsageUpdate{Used: used, Size: m.Settings.Window}})
	}
}

func policyNames(plans []*compaction.Plan) string {
	out := ""
	for i, p := range plans {
		if i > 0 {
			out += " + "
		}
		out += p.Policy
	}
	return out
}

// compactOnLoad runs right after session/load: a stored context already
// over the threshold is compacted at once, with the deterministic summary
// (load never waits for the model). loaded are the messages the load read
// (after seed was taken): the check measures their active part instead of
// reading it again, and that part, counted, seeds the session's kept
// context, so the next turn reads only what is newer. Only a context found
// over the threshold is brought up to date and compacted, under the
// session's lease.
func (a *Agent) compactOnLoad(ctx context.Context, sess *session, s *persistence.Session, loaded []persistence.Message, seed request.SeedTicket) {
	m := a.meterFor(s)
	st := m.Settings
	check := st.Window > 0 && st.Auto
	var c compaction.Counter // without the check, the first turn counts
	enc := ""
	if check {
		c, enc = m.Counter, m.Counter.Name()
	}
	view, counted, err := loadedView(ctx, c, loaded)
	if err != nil {
		a.log.Warn("compaction check on load", zap.String("session", s.ID), zap.Error(err))
		return
	}
	seed.Seed(view, enc, counted)
	if !check {
		return
	}
	if _, over := a.overOnLoad(sess, s, m, view); !over {
		return
	}
	err = a.leases.briefly(ctx, sess, func(ctx context.Context) {
		view, err := a.activeView(ctx, sess, m.Counter)
		if err != nil {
			a.log.Warn("compaction check on load", zap.String("session", s.ID), zap.Error(err))
			return
		}
		fixed, over := a.overOnLoad(sess, s, m, view)
		if !over {
			return
		}
		if _, err := a.runCompaction(ctx, sess, s, m, view, fixed, 1, compactOpts{noModel: true}); err != nil {
			a.log.Warn("compaction on load", zap.String("session", s.ID), zap.Error(err))
		}
	})
	if err != nil {
		a.log.Warn("compaction on load", zap.String("session", s.ID), zap.Error(err))
	}
}

// overOnLoad reports whether a loaded session's view is over the
// compaction threshold (and can be compacted: the fixed head fits).
func (a *Agent) overOnLoad(sess *session, s *persistence.Session, m request.Meter, view []persistence.Message) (fixed int, over bool) {
	fixed = a.fixedTokens(sess, s, m.Counter)
	entries := request.ContextMessages(m.Counter, a.systemPrompt(sess, s), view)
	used, _ := sess.measure(entries, fixed)
	return fixed, used > m.Settings.Trigger() && fixed <= m.Settings.Budget()
}

// loadedView is the model's view among the messages a load read, with
// token counts made with c (nil: none) in memory where the stored ones are
// missing or from another tokenizer, returned by message id (the next
// request stores them).
func loadedView(ctx context.Context, c compaction.Counter, loaded []persistence.Message) ([]persistence.Message, map[int64]int, error) {
	var view []persistence.Message
	for i := range loaded {
		if loaded[i].IsActive {
			view = append(view, loaded[i])
		}
	}
	if c == nil {
		return view, nil, nil
	}
	counted, err := request.CountView(ctx, c, view)
	return view, counted, err
}

// activeView returns the model's current view (active messages only: the
// rebuild never reads compacted history) with token counts made with c,
// counting (and caching in the store) those that are missing or were made
// with another tokenizer. Under the session's lease it is the kept view
// brought up to date; otherwise it is read afresh. The result is shared:
// callers must not change its messages.
func (a *Agent) activeView(ctx context.Context, sess *session, c compaction.Counter) ([]persistence.Message, error) {
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
func (a *Agent) fixedTokens(sess *session, s *persistence.Session, c compaction.Counter) int {
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
