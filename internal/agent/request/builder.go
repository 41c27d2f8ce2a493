package request

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/termsafe"
	"go.uber.org/zap"
)

// Builder builds each model request of a session from the store: the
// context rebuilt from the stored messages, measured against the model's
// window, compacted when it would not fit, with the system prompt and the
// tools' schemas; after the request it reports the usage and learns from an
// endpoint that refused or cut it. What it needs of the agent that runs it
// is its Host.
type Builder struct {
	host     Host
	store    MessageReader
	models   *Models
	settings compaction.Settings // thresholds; Window/OutputReserve per model
	cfg      BuilderConfig
	log      *zap.Logger

	mu       sync.Mutex
	counters map[string]compaction.Counter // by model and tokenizer (mu)
}

// BuilderConfig is what the builder takes of the agent's settings.
type BuilderConfig struct {
	NoTools            bool             // no tools are offered: the window advice says so
	Now                func() time.Time // the date in the system prompt
	SystemPrompt       string           // replaces the tier's workflow ("": the built-in one)
	SystemPromptAppend string           // added after it
	ChildEnv           []string         // the environment the project probe runs with
	// ModeText is what the system prompt tells the model of a session mode.
	ModeText func(mode string) string
}

// Host is what the builder asks of the agent that runs it: the agent holds
// the sessions (a Session's Holder is the agent's own), their leases and
// the connection.
type Host interface {
	// Send sends an update to the client (unless the session's prompt was
	// already answered); Capabilities are the client's.
	Send(ctx context.Context, sess *Session, u acp.SessionUpdate)
	Capabilities() acp.ClientCapabilities
	// Record writes a lifecycle event to the frame log.
	Record(ctx context.Context, sessionID string, kind persistence.EventKind, data any)
	// Writes is the store the session's writes go to, fenced by its lease
	// while this process holds it; HoldsLease says whether it does, and
	// Briefly runs fn holding it (nothing when another process does).
	Writes(sess *Session) Writer
	HoldsLease(sess *Session) bool
	Briefly(ctx context.Context, sess *Session, fn func(context.Context)) error
	// StoreError is the client's error for a failed store step.
	StoreError(op string, err error) error
	// Facts reads the session's stored settings; RecordUsage and
	// RememberInstructions change them (RecordUsage returns the session's
	// cost so far in the model's currency).
	Facts(s *persistence.Session) Facts
	RecordUsage(ctx context.Context, sess *Session, used int, model Model, u provider.Usage) (total float64, err error)
	RememberInstructions(ctx context.Context, sess *Session, paths []string) error
	// Tools are the schemas of the tools the session's model is offered.
	Tools(sess *Session, s *persistence.Session) []provider.Tool
	// Stream makes a model request whose reply the client never sees (a
	// summary), under the agent's retry policy.
	Stream(ctx context.Context, sessionID string, model Model, req provider.Request) (*provider.Result, error)
	// EndpointAnswered notes that model's endpoint answered a request.
	EndpointAnswered(model Model)
}

// Writer is the session's fenced store, as the builder writes to it.
type Writer interface {
	MessageUpdater
	SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error
	Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error
}

// Facts are what the builder reads of a session's stored settings.
type Facts struct {
	Model        string        // the model the session uses
	Mode         string        // the session mode (BuilderConfig.ModeText tells it the model)
	ClientPrompt *ClientPrompt // the client's systemPrompt (nil: none)
	Instructions []string      // nested instruction files loaded so far
	Used         int           // the last request's tokens
	Cost         map[string]float64
}

// ClientPrompt is a client's systemPrompt: it replaces the workflow prompt
// (Override) or is added after it.
type ClientPrompt struct {
	Override bool
	Text     string
}

// NewBuilder returns a builder of requests to models against store, with
// the compaction thresholds of settings.
func NewBuilder(host Host, store MessageReader, models *Models, settings compaction.Settings, cfg BuilderConfig, log *zap.Logger) *Builder {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ModeText == nil {
		cfg.ModeText = func(mode string) string { return mode }
	}
	return &Builder{host: host, store: store, models: models, settings: settings, cfg: cfg, log: log,
		counters: make(map[string]compaction.Counter)}
}

// MeterFor returns the meter of the session's current model. A model whose
// window is only assumed gets Window 0: no automatic compaction.
func (b *Builder) MeterFor(s *persistence.Session) Meter {
	model := b.SessionModel(s)
	st := b.settings
	st.Window, st.OutputReserve = model.ContextWindow, model.OutputReserve
	if model.WindowAssumed {
		st.Window, st.OutputReserve = 0, 0
	}
	return Meter{Model: model, Counter: b.CounterFor(model), Settings: st}
}

// CounterFor returns the (cached) token counter of a model.
func (b *Builder) CounterFor(m Model) compaction.Counter {
	key := m.Name + "\x00" + m.Tokenizer
	b.mu.Lock()
	defer b.mu.Unlock()
	if cnt := b.counters[key]; cnt != nil {
		return cnt
	}
	cnt, err := compaction.NewCounter(m.Name, m.Tokenizer)
	if err != nil {
		b.log.Warn("unknown tokenizer; counting with the estimator", zap.String("model", m.Name), zap.Error(err))
		cnt = compaction.Estimator{}
	}
	b.counters[key] = cnt
	return cnt
}

// SetCounter makes m's requests counted with c (a tokenizer the caller
// chose, or a test's counter).
func (b *Builder) SetCounter(m Model, c compaction.Counter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counters[m.Name+"\x00"+m.Tokenizer] = c
}

// ActiveView returns the model's current view (active messages only: the
// rebuild never reads compacted history) with token counts made with c,
// counting (and caching in the store) those that are missing or were made
// with another tokenizer. Under the session's lease it is the kept view
// brought up to date; otherwise it is read afresh. The result is shared:
// callers must not change its messages.
func (b *Builder) ActiveView(ctx context.Context, sess *Session, c compaction.Counter) ([]persistence.Message, error) {
	sessionID := sess.ID
	var view []persistence.Message
	var counted map[int64]int
	var err error
	if b.host.HoldsLease(sess) {
		view, counted, err = sess.Cache.Sync(ctx, b.store, sessionID, c)
	} else if view, err = b.store.Messages(ctx, sessionID, persistence.MessageFilter{ActiveOnly: true}); err == nil {
		counted, err = CountView(ctx, c, view)
	}
	if err != nil {
		return nil, err
	}
	if len(counted) > 0 {
		// A cache: a failed write costs a recount next time, nothing else.
		if err := b.host.Writes(sess).SetTokenCounts(context.WithoutCancel(ctx), sessionID, c.Name(), counted); err != nil {
			b.log.Warn("caching token counts", zap.String("session", sessionID), zap.Error(err))
		}
	}
	return view, nil
}

// SessionModel is the model a session uses now.
func (b *Builder) SessionModel(s *persistence.Session) Model {
	return b.models.Named(b.host.Facts(s).Model)
}

// Settings are the compaction thresholds (the window and reserve are each
// model's).
func (b *Builder) Settings() compaction.Settings { return b.settings }

// say tells the user something about the context window: a notice where
// the client shows them, else a bracketed line of the reply.
func (b *Builder) say(ctx context.Context, sess *Session, text string) {
	if b.host.Capabilities().SupportsNotices() {
		b.host.Send(ctx, sess, acp.Notice{Severity: "warning", Title: "Context window", Description: text}.Update())
		return
	}
	b.host.Send(ctx, sess, acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock("[" + text + "]\n\n")}})
}

// overflow is the error for a request that cannot fit the window: -32603
// whose data says so (reason context_window_exceeded), with why and what to
// do.
func (b *Builder) overflow(m Meter, used int, why string) error {
	msg := fmt.Sprintf("The context window is full: the next model request needs %d tokens and %s has %d with %d reserved for the reply; %s",
		used, m.Model.Name, m.Settings.Window, m.Settings.Reserve(), why)
	if !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "?") {
		msg += "."
	}
	e := acp.InternalError("%s", msg)
	e.Data = map[string]any{"reason": "context_window_exceeded", "tokens": used, "window": m.Settings.Window}
	return e
}

// NewID returns a random identifier with a prefix. Identity never comes
// from a clock.
func NewID(prefix string) string {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return prefix + hex.EncodeToString(id[:])
}

func (b *Builder) startProbe(cwd string, date time.Time, tier sysprompt.Tier) *probe {
	p := &probe{done: make(chan struct{})}
	GoSafe(b.log, "reading the session's environment", func() {
		defer close(p.done)
		p.env = sysprompt.Probe(context.Background(), cwd, date, tier == sysprompt.Full, b.cfg.ChildEnv)
	})
	return p
}

// facts returns the session's environment and instruction files for the
// tier, gathering them the first time. fresh lists the files just read
// (nil when they were already known), nested ones of an earlier process
// included.
func (b *Builder) facts(sess *Session, s *persistence.Session, tier sysprompt.Tier) (env *probe, ins []sysprompt.Instruction, fresh []sysprompt.Instruction) {
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
		f.nested = f.loader.Reload(b.host.Facts(s).Instructions)
		fresh = append(f.initial[:len(f.initial):len(f.initial)], f.nested...)
	}
	return f.env, append(f.initial[:len(f.initial):len(f.initial)], f.nested...), fresh
}

// SystemPrompt is the session's system prompt: the tier's workflow (or the
// configured or client's replacement), the additions, the environment, the
// mode and the project instructions. It changes only when the session's
// model, mode, directory or loaded instruction files change.
func (b *Builder) SystemPrompt(sess *Session, s *persistence.Session) string {
	meta := b.host.Facts(s)
	model := b.models.Named(meta.Model)
	tier := sysprompt.TierFor(model.ContextWindow)
	env, ins, _ := b.facts(sess, s, tier)
	p := sysprompt.Session{Tier: tier, Base: b.cfg.SystemPrompt, Model: model.Name, Mode: b.cfg.ModeText(meta.Mode), Env: env.wait(), Instructions: ins}
	if model.SystemPrompt != "" {
		p.Base = model.SystemPrompt
	}
	p.Append = append(p.Append, b.cfg.SystemPromptAppend, model.SystemPromptAppend)
	if cp := meta.ClientPrompt; cp != nil {
		if cp.Override {
			p.Base = cp.Text
		} else {
			p.Append = append(p.Append, cp.Text)
		}
	}
	return sysprompt.Build(p)
}

// AnnounceInstructions gathers the session's prompt facts right after it
// opened and tells the user which instruction files apply.
func (b *Builder) AnnounceInstructions(ctx context.Context, sess *Session, s *persistence.Session) {
	tier := sysprompt.TierFor(b.SessionModel(s).ContextWindow)
	_, _, fresh := b.facts(sess, s, tier)
	b.tellInstructions(ctx, sess, fresh)
}

// NestedInstructions loads the instruction files of the folders below the
// session directory that a tool call touched for the first time: their
// text goes into the call's result now and into the system prompt from the
// next request on, and the session remembers them (a reload or restart
// neither repeats nor loses them).
func (b *Builder) NestedInstructions(ctx context.Context, sess *Session, s *persistence.Session, locs []acp.ToolCallLocation) string {
	if len(locs) == 0 {
		return ""
	}
	tier := sysprompt.TierFor(b.SessionModel(s).ContextWindow)
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
	paths := make([]string, len(found))
	for i, in := range found {
		paths[i] = in.Path
	}
	if err := b.host.RememberInstructions(context.WithoutCancel(ctx), sess, paths); err != nil {
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
func (b *Builder) tellInstructions(ctx context.Context, sess *Session, ins []sysprompt.Instruction) {
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
	update := acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: NewID("instr_"), Title: title + ": " + desc,
		Kind: acp.ToolKindRead, Status: acp.ToolStatusCompleted}}
	if b.host.Capabilities().SupportsNotices() {
		update = acp.Notice{Severity: "info", Title: title, Description: desc}.Update()
	}
	b.host.Send(ctx, sess, update)
}

// FixedTokens counts the head every request carries: system prompt and
// tool schemas (kept per session while they and the counter stay).
func (b *Builder) FixedTokens(sess *Session, s *persistence.Session, c compaction.Counter) int {
	return sess.Cache.FixedTokens(c, b.SystemPrompt(sess, s), b.host.Tools(sess, s))
}
