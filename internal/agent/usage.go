package agent

import (
	"context"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// afterModelRequest runs after every model request, finished or not, with
// what the provider reported.
func (b *builder) afterModelRequest(ctx context.Context, sess *session, s *persistence.Session, req provider.Request, res *provider.Result) {
	if res.FinishReason != "" && b.auth.defaultEndpoint(b.models.Named(req.Model)) {
		b.auth.seen.answered() // the endpoint signing in is about (logout.go)
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
func (b *builder) reportUsage(ctx context.Context, sess *session, s *persistence.Session, req provider.Request, res *provider.Result) {
	model := b.models.Named(req.Model)
	u := res.Usage
	if t := sess.runningTurn(); u != nil && t != nil {
		t.usage.Add(*u)
	}
	if u == nil {
		if res.FinishReason == "" {
			return // a failed request: nothing to measure
		}
		u = sess.countedUsage(b.counterFor(model), res)
		model.InputPrice, model.OutputPrice = 0, 0
	}
	used := u.TotalTokens
	if used <= 0 {
		used = u.PromptTokens + u.CompletionTokens
	}
	update := &acp.UsageUpdate{Used: used, Size: model.ContextWindow}
	var total float64
	_, err := b.updateMeta(context.WithoutCancel(ctx), sess, func(_ *persistence.Session, m *sessionMeta) {
		m.Used = used
		if !model.Priced() {
			return
		}
		total = m.addCost(model.Currency, model.Cost(*u))
	})
	switch {
	case err != nil:
		b.log.Warn("cannot record the session's usage and cost", zap.String("session", s.ID), zap.Error(err))
	case model.Priced():
		update.Cost = &acp.Cost{Amount: total, Currency: model.Currency}
	}
	b.sendUpdate(ctx, sess, acp.SessionUpdate{UsageUpdate: update})
}

// lastUsage is the usage update that shows a reopened session's context:
// the last request's tokens against the session's model window and the
// cumulative cost. nil before the first model request.
func (b *builder) lastUsage(s *persistence.Session) *acp.UsageUpdate {
	m := decodeMeta(s.Metadata)
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
