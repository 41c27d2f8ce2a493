package compaction

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// ErrNothingToCompact: the view has nothing older than what must be kept.
var ErrNothingToCompact = errors.New("nothing to compact")

// ErrStalled: the best plan saves less than Settings.StallRatio. It is not
// applied; compacting again would only loop.
var ErrStalled = errors.New("compaction would save too little")

// OverflowError says a request cannot be made to fit the window.
type OverflowError struct {
	Tokens, Budget, Window int
	Reason                 string
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("the request needs %d tokens but the model's window of %d leaves %d for input: %s",
		e.Tokens, e.Window, e.Budget, e.Reason)
}

// Summarizer asks the model for a summary; it returns the reply's text.
type Summarizer func(ctx context.Context, req provider.Request) (string, error)

// Applier applies a plan (in one transaction) and returns the new active
// view in seq order with token counts filled.
type Applier func(ctx context.Context, p *Plan) ([]persistence.Message, error)

// Compactor runs the policy pipeline, cheapest first.
type Compactor struct {
	Counter   Counter
	Settings  Settings
	Summarize Summarizer // nil: no model (the deterministic summary is used)
	Apply     Applier
	// ApplyImages stores an image plan's messages in place (same seq, new
	// Meta and TokenCount) and returns the new active view in seq order.
	// nil: automatic runs leave images alone.
	ApplyImages func(ctx context.Context, p *ImagePlan) ([]persistence.Message, error)
}

// Request is one compaction run.
type Request struct {
	View  []persistence.Message // active messages, seq order, TokenCount set
	Fixed int                   // tokens of the system prompt and tool schemas
	// Manual runs /compact: no pruning, keep Settings.ManualKeep messages,
	// summarise with Focus.
	Manual bool
	Focus  string
}

// Result lists the applied plans and the request size after them.
type Result struct {
	Plans  []*Plan
	Images *ImagePlan // the old images taken out first; nil: none (ImagesNotice tells the user)
	Tokens int
}

// Run compacts req.View. Automatic runs go: take old images out (when
// ApplyImages is set); prune old tool output; if still
// over the threshold, summarise the older turns with the model (the
// deterministic summary if the model fails); if still over the budget, drop
// the oldest turns. Each step's plan is checked against the invariants
// before it is applied. The returned error is ErrNothingToCompact,
// ErrStalled or an *OverflowError (wrapped, with what was applied so far in
// Result), a context error, or an apply error.
func (x *Compactor) Run(ctx context.Context, req Request) (Result, error) {
	var res Result
	view := req.View
	s := x.Settings
	tokens := req.Fixed + ViewTokens(x.Counter, view)
	res.Tokens = tokens
	apply := func(p *Plan) error {
		if err := CheckPlan(x.Counter, view, p); err != nil {
			return fmt.Errorf("compaction: %s plan breaks an invariant (not applied): %w", p.Policy, err)
		}
		nv, err := x.Apply(ctx, p)
		if err != nil {
			return err
		}
		view = nv
		res.Plans = append(res.Plans, p)
		res.Tokens = req.Fixed + ViewTokens(x.Counter, view)
		return nil
	}

	if req.Manual {
		k := manualCut(view, s.ManualKeep)
		if n := len(k.compacted()); n < 3 {
			return res, fmt.Errorf("%w: only %d message(s) are older than the %d most recent ones kept (at least 3 are needed)",
				ErrNothingToCompact, n, s.ManualKeep)
		}
		p, err := x.summarize(ctx, req, view, k)
		if err != nil {
			return res, err
		}
		if p.TokensAfter >= p.TokensBefore {
			return res, fmt.Errorf("%w: the summary (%d tokens in total) would not be smaller than the messages it replaces (%d)",
				ErrStalled, p.TokensAfter, p.TokensBefore)
		}
		return res, apply(p)
	}

	budget := s.Budget()
	// (0) take old images out, before any text: one costs as much as pages
	// of conversation, and the user can attach it again.
	if x.ApplyImages != nil {
		p, err := DropImages(x.Counter, req.Fixed, view, s, s.TargetTokens())
		if err != nil {
			return res, err
		}
		if p != nil {
			if err := CheckImagePlan(view, p); err != nil {
				return res, fmt.Errorf("compaction: image plan breaks an invariant (not applied): %w", err)
			}
			nv, err := x.ApplyImages(ctx, p)
			if err != nil {
				return res, err
			}
			view, res.Images = nv, p
			res.Tokens = req.Fixed + ViewTokens(x.Counter, view)
			if res.Tokens <= s.Trigger() {
				return res, nil
			}
		}
	}
	// (a) prune old tool output.
	if p := Prune(x.Counter, req.Fixed, view, s); p != nil {
		if err := apply(p); err != nil {
			return res, err
		}
		if res.Tokens <= s.Trigger() {
			return res, nil
		}
	}
	// (b) summarise with the model, (c) without it when it fails.
	sumRoom := summaryTokens(s) + pinnedTextTokens(s)*2
	k, ok := chooseCut(x.Counter, view, s.KeepTurns, req.Fixed, sumRoom, s.TargetTokens())
	if !ok {
		if res.Tokens <= budget {
			return res, nil // over the threshold, but it fits and nothing can be cut
		}
		return res, &OverflowError{Tokens: res.Tokens, Budget: budget, Window: s.Window,
			Reason: "the newest request with its tool calls and results is all that is left, and it does not fit"}
	}
	p, err := x.summarize(ctx, req, view, k)
	if err != nil {
		return res, err
	}
	if p.TokensAfter <= budget {
		if p.Saved() < s.StallRatio {
			return res, fmt.Errorf("%w: compacting would go from %d to %d tokens (%.1f%% saved, under the %.0f%% minimum)",
				ErrStalled, p.TokensBefore, p.TokensAfter, 100*p.Saved(), 100*s.StallRatio)
		}
		if err := apply(p); err != nil {
			return res, err
		}
		return res, nil
	}
	// (d) drop the oldest turns: keep only the newest request's turn and the
	// pinned state.
	k, ok = chooseCut(x.Counter, view, 0, req.Fixed, 0, 0)
	if !ok {
		return res, &OverflowError{Tokens: res.Tokens, Budget: budget, Window: s.Window,
			Reason: "nothing older than the newest request is left to drop"}
	}
	pinned := collectPinned(x.Counter, pinnedTextTokens(s), k.summaries, k.rest[:k.at], newestOf(view))
	p = summaryPlan(x.Counter, req.Fixed, view, k, PolicyDrop, dropText, pinned)
	if p.Saved() < s.StallRatio {
		return res, fmt.Errorf("%w: dropping old turns would go from %d to %d tokens", ErrStalled, p.TokensBefore, p.TokensAfter)
	}
	if err := apply(p); err != nil {
		return res, err
	}
	if res.Tokens > budget {
		return res, &OverflowError{Tokens: res.Tokens, Budget: budget, Window: s.Window,
			Reason: "even with every older turn dropped, the newest request with its tool calls and results does not fit"}
	}
	return res, nil
}

// summarize asks the model for a summary of k's compacted part and falls
// back to the deterministic summary when the model fails or answers with
// nothing. Only cancellation is returned as an error.
func (x *Compactor) summarize(ctx context.Context, req Request, view []persistence.Message, k cut) (*Plan, error) {
	s := x.Settings
	pinned := collectPinned(x.Counter, pinnedTextTokens(s), k.summaries, k.rest[:k.at], newestOf(view))
	maxTokens := summaryTokens(s)
	var reason string
	if x.Summarize != nil {
		sreq := summaryRequest(x.Counter, k, pinned, req.Focus, s, maxTokens)
		var text string
		var err error
		if need := requestTokens(x.Counter, sreq) + maxTokens; s.Window > 0 && need > s.Window {
			err = fmt.Errorf("the summary request (%d tokens with its reply) cannot fit the %d-token window", need, s.Window)
		} else {
			text, err = x.Summarize(ctx, sreq)
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			reason = "the model's summary request failed: " + err.Error()
		case len(text) == 0 || x.Counter.Count(text) == 0:
			reason = "the model answered the summary request with nothing"
		default:
			return summaryPlan(x.Counter, req.Fixed, view, k, PolicySummarize, truncate(x.Counter, text, maxTokens), pinned), nil
		}
	} else {
		reason = "no model available for summaries"
	}
	p := summaryPlan(x.Counter, req.Fixed, view, k, PolicyFallback, fallbackSummary(x.Counter, k, maxTokens, reason), pinned)
	p.Note = reason
	return p, nil
}

func newestOf(view []persistence.Message) *persistence.Message {
	_, rest := split(view)
	if i := newestUser(rest); i >= 0 {
		return &rest[i]
	}
	return nil
}

// requestTokens counts a request's messages (no tools).
func requestTokens(c Counter, req provider.Request) int {
	n := requestOverhead
	for _, m := range req.Messages {
		n += messageOverhead + c.Count(m.Content)
	}
	return n
}
