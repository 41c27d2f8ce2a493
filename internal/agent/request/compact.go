package request

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"go.uber.org/zap"
)

// CompactOptions say how a compaction was asked for.
type CompactOptions struct {
	manual  bool   // /compact
	focus   string // /compact's input
	noModel bool   // use the deterministic summary (session/load never waits for the model)
}

// Compact runs the pipeline on view, applies its plans, tells the
// client, and returns the new view. ratio scales the budget to the
// provider's reported counts.
func (b *Builder) Compact(ctx context.Context, sess *Session, s *persistence.Session, m Meter, view []persistence.Message, fixed int, ratio float64, o CompactOptions) ([]persistence.Message, error) {
	st := m.Settings
	planned := st
	if ratio != 1 && st.Window > 0 {
		planned.Window = int(float64(st.Window) / ratio)
		planned.OutputReserve = int(float64(st.Reserve()) / ratio)
	}
	ref := NewID("cmp_")
	b.host.Record(ctx, s.ID, persistence.EventCompactionStarted, map[string]any{"ref": ref, "manual": o.manual, "model": m.Model.Name})
	if b.host.Capabilities().SupportsCompaction() {
		b.host.Send(ctx, sess, acp.CompactionUpdate{CompactionID: ref, Status: acp.CompactionInProgress}.Update())
	}
	persistCtx := context.WithoutCancel(ctx)
	settings := settingsSnapshot(planned, m.Counter.Name(), ref, o.manual, o.focus)
	x := &compaction.Compactor{
		Counter:   m.Counter,
		Settings:  planned,
		Summarize: b.summarizer(s.ID, m.Model),
		Apply: func(ctx context.Context, p *compaction.Plan) ([]persistence.Message, error) {
			rec := &persistence.Compaction{SessionID: s.ID, Policy: p.Policy, CompactedIDs: p.Compacted, KeptIDs: p.Kept,
				TokensBefore: p.TokensBefore, TokensAfter: p.TokensAfter,
				MessagesBefore: p.MessagesBefore, MessagesAfter: p.MessagesAfter, Settings: settings(p)}
			for _, added := range p.Added {
				added.TokenEncoding = m.Counter.Name()
			}
			if err := sess.Rewrite(func() error { return b.host.Writes(sess).Compact(persistCtx, rec, p.Added) }); err != nil {
				return nil, b.host.StoreError("compact", err)
			}
			b.log.Info("compacted", zap.String("session", s.ID), zap.String("policy", p.Policy),
				zap.Int("tokensBefore", p.TokensBefore), zap.Int("tokensAfter", p.TokensAfter), zap.String("note", p.Note))
			return b.ActiveView(persistCtx, sess, m.Counter)
		},
	}
	// Old images go first, in place: each message keeps its parts (replay
	// and export show them), its Meta marks the ones the model no longer
	// gets and its TokenCount drops (compaction.DropImages).
	x.ApplyImages = func(ctx context.Context, p *compaction.ImagePlan) ([]persistence.Message, error) {
		for i := range p.Messages {
			msg := p.Messages[i]
			msg.SessionID, msg.TokenEncoding = s.ID, m.Counter.Name()
			if err := sess.UpdateMessage(persistCtx, b.host.Writes(sess), &msg); err != nil {
				return nil, b.host.StoreError("take old images out of the context", err)
			}
		}
		b.log.Info("old images taken out of the context", zap.String("session", s.ID), zap.Int("images", len(p.Dropped)),
			zap.Int("tokensBefore", p.TokensBefore), zap.Int("tokensAfter", p.TokensAfter))
		return b.ActiveView(persistCtx, sess, m.Counter)
	}
	if o.noModel {
		x.Summarize = nil
	}
	res, err := x.Run(ctx, compaction.Request{View: view, Fixed: fixed, Manual: o.manual, Focus: o.focus})
	done := map[string]any{"ref": ref, "tokens": res.Tokens, "policies": policyNames(res.Plans)}
	if err != nil {
		done["error"] = err.Error()
	}
	b.host.Record(context.WithoutCancel(ctx), s.ID, persistence.EventCompactionCompleted, done)
	b.reportCompaction(ctx, sess, s, m, ref, res, ratio, err)
	if err != nil {
		return nil, err
	}
	return b.ActiveView(ctx, sess, m.Counter)
}

// CompactNow is /compact: all but the most recent messages summarised now,
// focused on what the user names (focus may be ""). A success resets the
// breaker of failed automatic compactions.
func (b *Builder) CompactNow(ctx context.Context, sess *Session, s *persistence.Session, focus string) error {
	m := b.MeterFor(s)
	view, err := b.ActiveView(ctx, sess, m.Counter)
	if err != nil {
		return b.host.StoreError("compact", err)
	}
	fixed := b.FixedTokens(sess, s, m.Counter)
	_, ratio := sess.Measure(ContextMessages(m.Counter, b.SystemPrompt(sess, s), view), fixed)
	if _, err = b.Compact(ctx, sess, s, m, view, fixed, ratio, CompactOptions{manual: true, focus: focus}); err == nil {
		sess.mu.Lock()
		sess.budget.failures = 0 // a successful manual compaction resets the breaker
		sess.mu.Unlock()
	}
	return err
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
func (b *Builder) summarizer(sessionID string, model Model) compaction.Summarizer {
	return func(ctx context.Context, req provider.Request) (string, error) {
		req.Model, req.InlineThink = model.Name, model.InlineThink
		res, err := b.host.Stream(ctx, sessionID, model, req)
		if err != nil {
			return "", err
		}
		return res.Text, nil
	}
}

// reportCompaction tells the client what happened: compaction_update for
// clients that support it, otherwise one short agent message; then the new
// context size as usage_update.
func (b *Builder) reportCompaction(ctx context.Context, sess *Session, s *persistence.Session, m Meter, ref string, res compaction.Result, ratio float64, err error) {
	if ctx.Err() != nil {
		if b.host.Capabilities().SupportsCompaction() {
			b.host.Send(context.WithoutCancel(ctx), sess, acp.CompactionUpdate{CompactionID: ref, Status: acp.CompactionCancelled}.Update())
		}
		return
	}
	caps := b.host.Capabilities()
	var text string
	images := ""
	if res.Images != nil {
		images = compaction.ImagesNotice(res.Images.Dropped)
	}
	switch {
	case images != "" && len(res.Plans) == 0 && err == nil:
		text = "Context compacted: " + images
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
	if images != "" && (len(res.Plans) > 0 || err != nil) {
		text += " " + images
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
		b.host.Send(ctx, sess, u.Update())
	} else {
		// Its own message: it must not merge into the reply around it.
		b.host.Send(ctx, sess, acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock("[" + text + "]\n\n"), MessageID: ref}})
	}
	if (len(res.Plans) > 0 || res.Images != nil) && m.Settings.Window > 0 {
		// In the provider's units: our count scaled as its last report was.
		used := int(float64(res.Tokens) * ratio)
		b.host.Send(ctx, sess, acp.SessionUpdate{UsageUpdate: &acp.UsageUpdate{Used: used, Size: m.Settings.Window}})
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

// CompactOnLoad runs right after session/load: a stored context already
// over the threshold is compacted at once, with the deterministic summary
// (load never waits for the model). loaded are the messages the load read
// (after seed was taken): the check measures their active part instead of
// reading it again, and that part, counted, seeds the session's kept
// context, so the next turn reads only what is newer. Only a context found
// over the threshold is brought up to date and compacted, under the
// session's lease.
func (b *Builder) CompactOnLoad(ctx context.Context, sess *Session, s *persistence.Session, loaded []persistence.Message, seed SeedTicket) {
	m := b.MeterFor(s)
	st := m.Settings
	check := st.Window > 0 && st.Auto
	var c compaction.Counter // without the check, the first turn counts
	enc := ""
	if check {
		c, enc = m.Counter, m.Counter.Name()
	}
	view, counted, err := loadedView(ctx, c, loaded)
	if err != nil {
		b.log.Warn("compaction check on load", zap.String("session", s.ID), zap.Error(err))
		return
	}
	seed.Seed(view, enc, counted)
	if !check {
		return
	}
	if _, over := b.overOnLoad(sess, s, m, view); !over {
		return
	}
	err = b.host.Briefly(ctx, sess, func(ctx context.Context) {
		view, err := b.ActiveView(ctx, sess, m.Counter)
		if err != nil {
			b.log.Warn("compaction check on load", zap.String("session", s.ID), zap.Error(err))
			return
		}
		fixed, over := b.overOnLoad(sess, s, m, view)
		if !over {
			return
		}
		if _, err := b.Compact(ctx, sess, s, m, view, fixed, 1, CompactOptions{noModel: true}); err != nil {
			b.log.Warn("compaction on load", zap.String("session", s.ID), zap.Error(err))
		}
	})
	if err != nil {
		b.log.Warn("compaction on load", zap.String("session", s.ID), zap.Error(err))
	}
}

// overOnLoad reports whether a loaded session's view is over the
// compaction threshold (and can be compacted: the fixed head fits).
func (b *Builder) overOnLoad(sess *Session, s *persistence.Session, m Meter, view []persistence.Message) (fixed int, over bool) {
	fixed = b.FixedTokens(sess, s, m.Counter)
	entries := ContextMessages(m.Counter, b.SystemPrompt(sess, s), view)
	used, _ := sess.Measure(entries, fixed)
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
	counted, err := CountView(ctx, c, view)
	return view, counted, err
}
