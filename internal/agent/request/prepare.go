package request

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"go.uber.org/zap"
)

// Prepare returns the messages for the next model request, rebuilt
// from the store. It runs before every model request, including between
// tool iterations of one turn: when the request would pass the compaction
// threshold it compacts first, and when it cannot fit it fails with an
// error that says why instead of sending a request the model would reject.
func (b *Builder) Prepare(ctx context.Context, sess *Session, s *persistence.Session) ([]provider.Message, error) {
	m := b.MeterFor(s).Within(sess.turnWindow())
	view, err := b.ActiveView(ctx, sess, m.Counter)
	if err != nil {
		return nil, b.host.StoreError("build context", err)
	}
	fixed := b.FixedTokens(sess, s, m.Counter)
	entries := sess.Cache.RequestEntries(m.Counter, b.SystemPrompt(sess, s), view)
	if entries, err = b.checkBudget(ctx, sess, s, m, view, entries, fixed); err != nil {
		return nil, err
	}
	sess.Remember(entries, fixed)
	sess.withReasoningItems(entries)
	return MessagesOf(entries), nil
}

// checkBudget compacts the view when the request would pass the threshold
// (entries are the view's request messages) and returns the messages of
// the request to send, with every guard: auto-compaction off → an error only when it does not
// fit; at most one automatic compaction per turn; a breaker after
// MaxFailures failures; the stall guard (in the pipeline).
func (b *Builder) checkBudget(ctx context.Context, sess *Session, s *persistence.Session, m Meter, view []persistence.Message, entries []ContextEntry, fixed int) ([]ContextEntry, error) {
	st := m.Settings
	if st.Window <= 0 {
		return entries, nil // window unknown: nothing to measure against (warned at start)
	}
	if fixed > st.Budget() {
		return nil, b.overflow(m, fixed, fmt.Sprintf("the system prompt and tool schemas alone need %d tokens; %s", fixed, m.WindowFix(b.cfg.NoTools, fixed, fixed)))
	}
	used, ratio := sess.Measure(entries, fixed)
	if used <= st.Trigger() {
		return entries, nil
	}
	fits := used <= st.Budget()
	if !st.Auto {
		if fits {
			return entries, nil
		}
		return nil, b.overflow(m, used, "automatic compaction is off (CROW_AUTO_COMPACT=0); run /compact or start a new session")
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
		return nil, b.overflow(m, used, fmt.Sprintf("automatic compaction stopped after %d failed attempts; run /compact or start a new session", failures))
	case sameTurn:
		if fits {
			return entries, nil
		}
		return nil, b.overflow(m, used, "this turn already compacted once and its own messages no longer fit; send a new prompt to continue")
	}

	res, err := b.Compact(ctx, sess, s, m, view, fixed, ratio, CompactOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sess.mu.Lock()
		bud.failures++
		sess.mu.Unlock()
		nv, verr := b.ActiveView(ctx, sess, m.Counter)
		if verr != nil {
			return nil, b.host.StoreError("build context", verr)
		}
		nentries := ContextMessages(m.Counter, b.SystemPrompt(sess, s), nv)
		after, _ := sess.Measure(nentries, fixed)
		if after <= st.Budget() {
			return nentries, nil // over the threshold but it fits: go on, the failure is reported
		}
		if FitsWindow(st, after) {
			// Over the budget, but the window holds it with room for a
			// shorter reply: send it rather than call the window full.
			b.log.Info("compaction could not bring the request under the budget; sending it, it fits the window",
				zap.String("session", s.ID), zap.Int("tokens", after), zap.Int("window", st.Window), zap.Error(err))
			return nentries, nil
		}
		var oe *compaction.OverflowError
		if errors.As(err, &oe) {
			return nil, b.overflow(m, used, oe.Reason+"; "+m.WindowFix(b.cfg.NoTools, fixed, after))
		}
		return nil, b.overflow(m, used, "compaction failed: "+err.Error())
	}
	sess.mu.Lock()
	bud.failures = 0
	sess.mu.Unlock()
	return ContextMessages(m.Counter, b.SystemPrompt(sess, s), res), nil
}

// Refusal is a model request the endpoint refused because its
// prompt did not fit; Err is what the client gets if it cannot be
// recovered.
type Refusal struct {
	Overflow *provider.Overflow
	Err      error
}

func (o *Refusal) Error() string { return o.Err.Error() }
func (o *Refusal) Unwrap() error { return o.Err }

// RecoverOverflow handles a refused request once per turn: it learns the
// real window from the error, tells the user, and compacts to it. A nil
// error means the request may be sent again (once); otherwise the error
// says why it cannot fit.
//
// An endpoint may contradict itself: it accepted a larger prompt before
// and now names a smaller window (OpenRouter sent the model to a provider
// with less context; llama-server or Ollama restarted with a smaller
// one). Such a window is not remembered (believable: it would shrink every
// later turn on one answer), but this turn still has to fit what the
// endpoint says now: its requests are compacted to that window, or below
// the refused prompt, for the rest of the turn (session.turnWindow).
func (b *Builder) RecoverOverflow(ctx context.Context, sess *Session, s *persistence.Session, o *Refusal) error {
	m := b.MeterFor(s)
	sess.mu.Lock()
	bud := &sess.budget
	sent := bud.estimated // our count of the refused request
	sess.mu.Unlock()
	ov := o.Overflow
	refused := ov.Prompt
	if refused <= 0 {
		refused = sent
	}
	window, source := ov.Window, LearnedPrefix+"the endpoint's error ("+ov.Shape+")"
	remembered := window
	if window <= 0 {
		// The error named no window: it is below what was sent.
		window, source = refused*9/10, LearnedPrefix+"the endpoint's refusal of "+fmt.Sprint(refused)+" tokens ("+ov.Shape+")"
		if m.Settings.Window > 0 && !m.Model.WindowAssumed {
			window = min(window, m.Settings.Window*9/10)
		}
		// The real window lies between what the endpoint took (by its
		// count) and what it refused.
		remembered = max(window, b.models.AcceptedFor(m.Model))
	}
	// What is remembered has a floor; this turn fits what the endpoint
	// says now, or, when that is no window a model server runs, less
	// than the prompt it refused.
	learned := b.models.Believable(m.Model, remembered, source)
	if learned {
		window = remembered // the model's window from now on, this turn included
	}
	if window < MinLearnedWindow {
		window = refused * 9 / 10
	}
	if window < MinLearnedWindow {
		return o.Err
	}
	old, oldSource := m.Model.ContextWindow, m.Model.WindowSource
	if learned && b.models.LearnWindow(m.Model.Name, remembered, source) {
		b.models.CacheWindow(ctx, m.Model, remembered, source)
	}
	b.log.Warn("the model endpoint refused a request that does not fit its context window; compacting and retrying once",
		zap.String("session", s.ID), zap.String("model", m.Model.Name), zap.Int("window", window), zap.Bool("remembered", learned),
		zap.Int("promptTokens", ov.Prompt), zap.Int("estimated", sent), zap.String("shape", ov.Shape))
	text := fmt.Sprintf("The model endpoint refused the request: it does not fit %s's context window of %d tokens (%s; %d was assumed).",
		m.Model.Name, remembered, source, old)
	switch {
	case !learned:
		_, floor := b.models.WindowFloor(m.Model)
		text = fmt.Sprintf("The model endpoint refused the request as too long for %s, naming a window of %d tokens, under %s: it may serve the model with less context now (another provider behind a router, a server restarted with a smaller one). This turn is fitted to %d tokens; later turns keep the window of %d.",
			m.Model.Name, remembered, floor, window, old)
	case oldSource == WindowConfigured:
		text += fmt.Sprintf(" The configured window of %d is larger than what the server takes: set CROW_CONTEXT_WINDOW (or context_window) to %d or less, or give the server a larger context; each new process starts from the configured value again.", old, remembered)
	}
	if !b.settings.Auto {
		b.say(ctx, sess, text+" Automatic compaction is off: run /compact or start a new session.")
		return o.Err
	}
	b.say(ctx, sess, text+" Compacting the conversation and trying again once.")

	// The rest of the turn is measured against the window just named
	// (learned, it is the model's window anyway).
	sess.mu.Lock()
	bud.window, bud.windowTurn = window, sess.turn
	sess.mu.Unlock()
	m = b.MeterFor(s).Within(window)
	ratio := 1.0
	if ov.Prompt > 0 && sent > 0 {
		// The endpoint's count of the refused request calibrates ours.
		ratio = min(max(float64(ov.Prompt)/float64(sent), 0.5), 3)
		sess.mu.Lock()
		bud.reported = ov.Prompt
		sess.mu.Unlock()
	}
	view, err := b.ActiveView(ctx, sess, m.Counter)
	if err != nil {
		return b.host.StoreError("build context", err)
	}
	fixed := b.FixedTokens(sess, s, m.Counter)
	if int(float64(fixed)*ratio) > m.Settings.Budget() {
		return b.overflow(m, fixed, fmt.Sprintf("the system prompt and tool schemas alone need %d tokens; %s", fixed, m.WindowFix(b.cfg.NoTools, fixed, fixed)))
	}
	// This is the turn's automatic compaction: no second one follows it.
	sess.mu.Lock()
	bud.turn = sess.turn
	sess.mu.Unlock()
	if _, err := b.Compact(ctx, sess, s, m, view, fixed, ratio, CompactOptions{}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return b.overflow(m, sent, "the endpoint refused the request and compacting failed: "+err.Error())
	}
	return nil
}

// truncationRatio: a reported prompt under this share of what we sent was
// cut by the endpoint. Our counts are exact for OpenAI models and within
// about a third of real tokenizers otherwise, so 60% is outside their error.
const truncationRatio = 0.6

// minTruncationCheck: requests smaller than this are not judged.
const minTruncationCheck = 1024

// DetectTruncation notices an endpoint that silently cut the prompt
// (Ollama keeps only the last num_ctx tokens and answers as if nothing
// happened): the prompt_tokens it reports are far below what was sent.
// Only providers marked SilentTruncation are judged: the others refuse a
// prompt that does not fit, and their usage is the truth. The
// reported size becomes the model's window, so the next request is
// compacted to fit, and the user is warned once per model. It reports
// whether the request was truncated (its usage then says nothing about the
// context). Requests with images are not judged: what an image costs
// differs too much between providers.
func (b *Builder) DetectTruncation(ctx context.Context, sess *Session, s *persistence.Session, model Model, req provider.Request, res *provider.Result) bool {
	if res == nil || res.Usage == nil || res.Usage.PromptTokens <= 0 || hasImages(req) || !b.models.ProviderOf(model).SilentTruncation {
		return false
	}
	sess.mu.Lock()
	sent := sess.budget.estimated
	sess.mu.Unlock()
	reported := res.Usage.PromptTokens
	if sent < minTruncationCheck || float64(reported) >= truncationRatio*float64(sent) {
		return false
	}
	if !b.models.Believable(model, reported, "the endpoint's usage report") {
		return true // its usage says nothing we can use
	}
	known := b.models.Learned(model.Name)
	if !b.models.LearnWindow(model.Name, reported, fmt.Sprintf(LearnedPrefix+"the endpoint's truncation of a %d-token prompt to %d tokens", sent, reported)) {
		return true
	}
	b.models.CacheWindow(ctx, model, reported, fmt.Sprintf(LearnedPrefix+"the endpoint's truncation of a %d-token prompt to %d tokens", sent, reported))
	b.log.Warn("the model endpoint silently truncated the prompt; using what it kept as the context window",
		zap.String("session", s.ID), zap.String("model", model.Name), zap.Int("sent", sent), zap.Int("kept", reported))
	if !known {
		b.say(ctx, sess, fmt.Sprintf("Warning: the model endpoint kept only %d of the about %d tokens sent (Ollama truncates silently past its num_ctx), so it did not see the whole conversation. crow-acp now uses %d tokens as %s's context window and compacts to fit; raise num_ctx (or OLLAMA_CONTEXT_LENGTH) to keep more.",
			reported, sent, reported, model.Name))
	}
	return true
}

func hasImages(req provider.Request) bool {
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Type == "image" {
				return true
			}
		}
	}
	return false
}

// AfterModelRequest runs after every model request, finished or not, with
// what the provider reported.
func (b *Builder) AfterModelRequest(ctx context.Context, sess *Session, s *persistence.Session, req provider.Request, res *provider.Result) {
	if res.FinishReason != "" {
		b.host.EndpointAnswered(b.models.Named(req.Model))
	}
	b.reportUsage(ctx, sess, s, req, res)
}

// reportUsage sends usage_update for one model request: the tokens that
// request put in the context (prompt + reply, as the provider counted them;
// never a running total, which would overflow any context meter) against
// the model's window, and the session's cumulative cost when the model has
// prices. The cost is persisted with the session. A provider that reports no
// usage (a server without stream_options, or one that refused it) gets our
// own count instead, for the context meter only: no cost is billed on a
// count of ours.
func (b *Builder) reportUsage(ctx context.Context, sess *Session, s *persistence.Session, req provider.Request, res *provider.Result) {
	model := b.models.Named(req.Model)
	u := res.Usage
	if u == nil {
		if res.FinishReason == "" {
			return // a failed request: nothing to measure
		}
		u = sess.countedUsage(b.CounterFor(model), res)
		model.InputPrice, model.OutputPrice = 0, 0
	}
	used := u.TotalTokens
	if used <= 0 {
		used = u.PromptTokens + u.CompletionTokens
	}
	update := &acp.UsageUpdate{Used: used, Size: model.ContextWindow}
	total, err := b.host.RecordUsage(context.WithoutCancel(ctx), sess, used, model, *u)
	switch {
	case err != nil:
		b.log.Warn("cannot record the session's usage and cost", zap.String("session", s.ID), zap.Error(err))
	case model.Priced():
		update.Cost = &acp.Cost{Amount: total, Currency: model.Currency}
	}
	b.host.Send(ctx, sess, acp.SessionUpdate{UsageUpdate: update})
}

// LastUsage is the usage update that shows a reopened session's context:
// the last request's tokens against the session's model window and the
// cumulative cost. nil before the first model
func (b *Builder) LastUsage(s *persistence.Session) *acp.UsageUpdate {
	m := b.host.Facts(s)
	if m.Used == 0 {
		return nil
	}
	model := b.models.Named(m.Model)
	u := &acp.UsageUpdate{Used: m.Used, Size: model.ContextWindow}
	if total, ok := m.Cost[model.Currency]; ok && model.Priced() {
		u.Cost = &acp.Cost{Amount: total, Currency: model.Currency}
	}
	return u
}
