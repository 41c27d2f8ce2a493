package agent

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

func (b *builder) startProbe(cwd string, date time.Time, tier sysprompt.Tier) *probe {
	p := &probe{done: make(chan struct{})}
	request.GoSafe(b.log, "reading the session's environment", func() {
		defer close(p.done)
		p.env = sysprompt.Probe(context.Background(), cwd, date, tier == sysprompt.Full, b.cfg.ChildEnv)
	})
	return p
}

// facts returns the session's environment and instruction files for the
// tier, gathering them the first time. fresh lists the files just read
// (nil when they were already known), nested ones of an earlier process
// included.
func (b *builder) facts(sess *session, s *persistence.Session, tier sysprompt.Tier) (env *probe, ins []sysprompt.Instruction, fresh []sysprompt.Instruction) {
	f := &sess.prompt
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.ready || f.cwd != s.Cwd || f.tier != tier {
		if f.date.IsZero() {
			f.date = b.cfg.Now()
		}
		f.cwd, f.tier, f.ready = s.Cwd, tier, true
		f.env = b.startProbe(s.Cwd, f.date, tier)
		f.loader = sysprompt.NewLoader(s.Cwd, tier.InstructionBytes())
		f.initial = f.loader.Initial()
		f.nested = f.loader.Reload(decodeMeta(s.Metadata).Instructions)
		fresh = append(f.initial[:len(f.initial):len(f.initial)], f.nested...)
	}
	return f.env, append(f.initial[:len(f.initial):len(f.initial)], f.nested...), fresh
}

// systemPrompt is the session's system prompt: the tier's workflow (or the
// configured or client's replacement), the additions, the environment, the
// mode and the project instructions. It changes only when the session's
// model, mode, directory or loaded instruction files change.
func (b *builder) systemPrompt(sess *session, s *persistence.Session) string {
	meta := decodeMeta(s.Metadata)
	model := b.models.Named(meta.Model)
	tier := sysprompt.TierFor(model.ContextWindow)
	env, ins, _ := b.facts(sess, s, tier)
	p := sysprompt.Session{Tier: tier, Base: b.cfg.SystemPrompt, Model: model.Name, Mode: modeForModel(currentMode(meta)), Env: env.wait(), Instructions: ins}
	if model.SystemPrompt != "" {
		p.Base = model.SystemPrompt
	}
	p.Append = append(p.Append, b.cfg.SystemPromptAppend, model.SystemPromptAppend)
	if cp := meta.SystemPrompt; cp != nil {
		if cp.Mode == acp.SystemPromptOverride {
			p.Base = cp.Text
		} else {
			p.Append = append(p.Append, cp.Text)
		}
	}
	return sysprompt.Build(p)
}

// modeForModel tells the model what the session's mode permits, so that it
// does not learn it from refused calls.
func modeForModel(mode string) string {
	for _, m := range sessionModes {
		if m.ID != mode {
			continue
		}
		s := m.Name + " (" + m.ID + "). " + m.Description
		switch mode {
		case ModePlan:
			s += " Do not try to edit files or run commands: investigate, then present a plan. The user switches the mode when they want it carried out."
		case ModeDefault, ModeAcceptEdits:
			s += " When the user declines a call, do not repeat it: adapt, or ask what they want."
		}
		return s
	}
	return mode
}

// announceInstructions gathers the session's prompt facts right after it
// opened and tells the user which instruction files apply.
func (b *builder) announceInstructions(ctx context.Context, sess *session, s *persistence.Session) {
	tier := sysprompt.TierFor(b.sessionModel(s).ContextWindow)
	_, _, fresh := b.facts(sess, s, tier)
	b.tellInstructions(ctx, sess, fresh)
}

// nestedInstructions loads the instruction files of the folders below the
// session directory that a tool call touched for the first time: their
// text goes into the call's result now and into the system prompt from the
// next request on, and the session remembers them (a reload or restart
// neither repeats nor loses them).
func (b *builder) nestedInstructions(ctx context.Context, sess *session, s *persistence.Session, locs []acp.ToolCallLocation) string {
	if len(locs) == 0 {
		return ""
	}
	tier := sysprompt.TierFor(b.sessionModel(s).ContextWindow)
	b.facts(sess, s, tier)
	f := &sess.prompt
	f.mu.Lock()
	var found []sysprompt.Instruction
	for _, loc := range locs {
		found = append(found, f.loader.Nested(loc.Path)...)
	}
	f.nested = append(f.nested, found...)
	f.mu.Unlock()
	if len(found) == 0 {
		return ""
	}
	if _, err := b.updateMeta(context.WithoutCancel(ctx), sess, func(_ *persistence.Session, m *sessionMeta) {
		for _, in := range found {
			m.Instructions = append(m.Instructions, in.Path)
		}
	}); err != nil {
		// The text is in the result and the prompt; a restart would offer
		// it once more.
		b.log.Warn("remembering loaded instruction files", zap.String("session", s.ID), zap.Error(err))
	}
	b.tellInstructions(ctx, sess, found)
	var text strings.Builder
	for _, in := range found {
		text.WriteString("\n\n")
		text.WriteString(in.Section())
	}
	return text.String()
}

// tellInstructions shows the user which instruction files were loaded:
// a notice where the client takes them, else a completed read card (not
// stored, so not replayed).
func (b *builder) tellInstructions(ctx context.Context, sess *session, ins []sysprompt.Instruction) {
	if len(ins) == 0 {
		return
	}
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = termsafe.Line(in.Path)
		switch {
		case in.Omitted:
			names[i] += " (not loaded: size limit reached)"
		case in.Truncated:
			names[i] += " (truncated)"
		}
	}
	const title = "Project instructions loaded"
	desc := strings.Join(names, ", ")
	update := acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: newID("instr_"), Title: title + ": " + desc,
		Kind: acp.ToolKindRead, Status: acp.ToolStatusCompleted}}
	if b.capabilities().SupportsNotices() {
		update = acp.Notice{Severity: "info", Title: title, Description: desc}.Update()
	}
	b.sendUpdate(ctx, sess, update)
}

// fixedTokens counts the head every request carries: system prompt and
// tool schemas (kept per session while they and the counter stay).
func (b *builder) fixedTokens(sess *session, s *persistence.Session, c compaction.Counter) int {
	return sess.cache.FixedTokens(c, b.systemPrompt(sess, s), b.toolDefinitions(sess, s))
}
