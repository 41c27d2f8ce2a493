package agent

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// overflowRefusal is a model request the endpoint refused because its
// prompt did not fit; err is what the client gets if it cannot be
// recovered.
type overflowRefusal struct {
	overflow *provider.Overflow
	err      error
}

func (o *overflowRefusal) Error() string { return o.err.Error() }
func (o *overflowRefusal) Unwrap() error { return o.err }

// recoverOverflow handles a refused request once per turn: it learns the
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
func (b *builder) recoverOverflow(ctx context.Context, sess *session, s *persistence.Session, o *overflowRefusal) error {
	m := b.meterFor(s)
	sess.mu.Lock()
	bud := &sess.budget
	sent := bud.estimated // our count of the refused request
	sess.mu.Unlock()
	ov := o.overflow
	refused := ov.Prompt
	if refused <= 0 {
		refused = sent
	}
	window, source := ov.Window, request.LearnedPrefix+"the endpoint's error ("+ov.Shape+")"
	remembered := window
	if window <= 0 {
		// The error named no window: it is below what was sent.
		window, source = refused*9/10, request.LearnedPrefix+"the endpoint's refusal of "+fmt.Sprint(refused)+" tokens ("+ov.Shape+")"
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
	if window < request.MinLearnedWindow {
		window = refused * 9 / 10
	}
	if window < request.MinLearnedWindow {
		return o.err
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
	case oldSource == request.WindowConfigured:
		text += fmt.Sprintf(" The configured window of %d is larger than what the server takes: set CROW_CONTEXT_WINDOW (or context_window) to %d or less, or give the server a larger context; each new process starts from the configured value again.", old, remembered)
	}
	if !b.compact.Auto {
		b.say(ctx, sess, text+" Automatic compaction is off: run /compact or start a new session.")
		return o.err
	}
	b.say(ctx, sess, text+" Compacting the conversation and trying again once.")

	// The rest of the turn is measured against the window just named
	// (learned, it is the model's window anyway).
	sess.mu.Lock()
	bud.window, bud.windowTurn = window, sess.turn
	sess.mu.Unlock()
	m = b.meterFor(s).Within(window)
	ratio := 1.0
	if ov.Prompt > 0 && sent > 0 {
		// The endpoint's count of the refused request calibrates ours.
		ratio = min(max(float64(ov.Prompt)/float64(sent), 0.5), 3)
		sess.mu.Lock()
		bud.reported = ov.Prompt
		sess.mu.Unlock()
	}
	view, err := b.activeView(ctx, sess, m.Counter)
	if err != nil {
		return storeError("build context", err)
	}
	fixed := b.fixedTokens(sess, s, m.Counter)
	if int(float64(fixed)*ratio) > m.Settings.Budget() {
		return overflow(m, fixed, fmt.Sprintf("the system prompt and tool schemas alone need %d tokens; %s", fixed, m.WindowFix(b.cfg.NoTools, fixed, fixed)))
	}
	// This is the turn's automatic compaction: no second one follows it.
	sess.mu.Lock()
	bud.turn = sess.turn
	sess.mu.Unlock()
	if _, err := b.runCompaction(ctx, sess, s, m, view, fixed, ratio, compactOpts{}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return overflow(m, sent, "the endpoint refused the request and compacting failed: "+err.Error())
	}
	return nil
}

// truncationRatio: a reported prompt under this share of what we sent was
// cut by the endpoint. Our counts are exact for OpenAI models and within
// about a third of real tokenizers otherwise, so 60% is outside their error.
const truncationRatio = 0.6

// minTruncationCheck: requests smaller than this are not judged.
const minTruncationCheck = 1024

// detectTruncation notices an endpoint that silently cut the prompt
// (Ollama keeps only the last num_ctx tokens and answers as if nothing
// happened): the prompt_tokens it reports are far below what was sent.
// Only providers marked SilentTruncation are judged: the others refuse a
// prompt that does not fit, and their usage is the truth. The
// reported size becomes the model's window, so the next request is
// compacted to fit, and the user is warned once per model. It reports
// whether the request was truncated (its usage then says nothing about the
// context). Requests with images are not judged: what an image costs
// differs too much between providers.
func (b *builder) detectTruncation(ctx context.Context, sess *session, s *persistence.Session, model request.Model, req provider.Request, res *provider.Result) bool {
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
	if !b.models.LearnWindow(model.Name, reported, fmt.Sprintf(request.LearnedPrefix+"the endpoint's truncation of a %d-token prompt to %d tokens", sent, reported)) {
		return true
	}
	b.models.CacheWindow(ctx, model, reported, fmt.Sprintf(request.LearnedPrefix+"the endpoint's truncation of a %d-token prompt to %d tokens", sent, reported))
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
