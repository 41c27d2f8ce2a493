// Package request builds each model request of a session (Builder): the
// context rebuilt from the stored messages, measured against the model's
// window, compacted when it would not fit, with the system prompt and the
// tools' schemas; after the request it reports usage and cost and learns
// the window from an endpoint that refused or cut a request. What it needs
// of the agent that runs it (send an update, write fenced by the lease,
// read and change the session's stored settings, list the tools, call the
// model for a summary) is its Host.
//
// Files, each using only those above it in this list:
//   - model.go: the models and endpoints a session may call, their prices
//     and context windows (Model, Provider, Models: configured, cached,
//     discovered from the endpoint, learned from a refusal or a truncation);
//   - context.go: the context rebuilt from the stored messages
//     (ContextEntry, ContextMessages) and the session's kept view of them
//     between requests (ContextCache);
//   - session.go: what a session keeps between its requests (Session: the
//     budget, the reasoning items, the kept view) and the measure of a
//     request against its model's window (Meter, the per-turn limits);
//   - builder.go: the Builder, its Host, the view and the system prompt;
//   - compact.go: compaction (automatic, /compact, on load) and its report;
//   - prepare.go: the request itself (Prepare), what its endpoint answered
//     (usage and cost, a refusal as too long, a silent truncation).
//
// It may import the wire types (acp), the store's domain types
// (internal/persistence), the model client (internal/provider),
// internal/compaction, internal/termsafe, and internal/agent/tool (a
// model's edit tool) and internal/agent/prompt (the system prompt's text);
// never internal/agent or a package above it.
package request

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"go.uber.org/zap"
)

// Model is one model the user can pick for a session. The list of models is
// configured once (CROW_MODELS, the config file) and offered to clients as
// the session's "model" config option; compaction and the context meter
// read the window from here.
type Model struct {
	Name  string // sent to the endpoint
	Title string // shown to the user; "" = Name
	// ContextWindow is the model's context size in tokens.
	ContextWindow int
	// OutputReserve is kept free for the reply when the context is filled.
	OutputReserve int
	// ImagesConfigured is the configuration's image flag (the models
	// table's images, CROW_MODELS' image=): nil when unset, and then what
	// the endpoint says (discovery) or the model's family decides.
	ImagesConfigured *bool
	// Images: the model reads image content parts (vision models), as
	// resolved: WithDefaults sets it from ImagesConfigured or the family
	// (provider.ResolveImages), discovery may change an unset one.
	Images bool
	// ImagesSource says what decided Images ("configured", "model family:
	// …", "discovered: …", "unknown model family").
	ImagesSource string
	// Prices per million tokens; both 0 = unknown, no cost is reported.
	// CachedInputPrice is for prompt tokens the provider served from its
	// cache (0 = InputPrice). PricesSet: the configuration named prices
	// (even 0), so the built-in ones (BuiltinPrice) do not apply.
	InputPrice       float64
	OutputPrice      float64
	CachedInputPrice float64
	PricesSet        bool
	Currency         string // ISO 4217; "" = DefaultCurrency
	// Provider names the endpoint that serves the model (a key of
	// Config.Providers); "" or an unknown name: the agent's default client.
	Provider string
	// Tokenizer is the token encoding compaction counts with ("" = auto:
	// the model's own encoding when known, else the estimator).
	Tokenizer string
	// ReasoningHistory and ToolCallIDs say how the history is written back
	// to this model ("": by its name; see provider.ReasoningHistory and
	// provider.ToolCallIDStyle).
	ReasoningHistory provider.ReasoningHistory
	ToolCallIDs      provider.ToolCallIDStyle
	// InlineThink says whether the model's replies start inside a <think>
	// block its chat template opened in the prompt ("": by its name; see
	// provider.InlineThink).
	InlineThink provider.InlineThink
	// SystemPrompt replaces the agent's system prompt for this model and
	// SystemPromptAppend is added to it ("": none; see sysprompt.go).
	SystemPrompt       string
	SystemPromptAppend string
	// WindowAssumed is set when no window was configured and the model is
	// not in compaction's table: ContextWindow is then DefaultContextWindow,
	// good for a context meter but not for compaction, which stays off for
	// the model (and says so) rather than guess.
	WindowAssumed bool
	// WindowSource says where ContextWindow comes from: WindowConfigured,
	// WindowBuiltIn, WindowAssumedSource, or what the endpoint told
	// ("discovered: …", "learned from …"). withDefaults fills it.
	WindowSource string
	// EditTool is the tool the model edits files with: tool.EditFileTool
	// or tool.ApplyPatchTool; "" = by its name (tool.ForModel).
	EditTool string
}

// Where a model's context window comes from (Model.WindowSource), besides
// what the endpoint tells.
const (
	WindowConfigured    = "configured"
	WindowBuiltIn       = "built in"
	WindowAssumedSource = "assumed (not configured, not discovered)"
)

// Defaults for models configured without these attributes.
const (
	DefaultContextWindow = 128000
	DefaultOutputReserve = 8192 // with the window/4 cap: a quarter of small windows, 8k of large ones
	DefaultCurrency      = "USD"
)

// DisplayName is the name shown to the user.
func (m Model) DisplayName() string {
	if m.Title != "" {
		return m.Title
	}
	return m.Name
}

// Priced reports whether a cost can be computed for this model.
func (m Model) Priced() bool { return m.InputPrice > 0 || m.OutputPrice > 0 }

// WithDefaults fills unset attributes.
func (m Model) WithDefaults() Model {
	switch {
	case m.ContextWindow > 0:
		if m.WindowSource == "" {
			m.WindowSource = WindowConfigured
		}
	case compaction.DefaultWindow(m.Name) > 0:
		m.ContextWindow, m.WindowSource = compaction.DefaultWindow(m.Name), WindowBuiltIn
	default:
		m.ContextWindow, m.WindowAssumed, m.WindowSource = DefaultContextWindow, true, WindowAssumedSource
	}
	if m.OutputReserve <= 0 {
		m.OutputReserve = min(DefaultOutputReserve, m.ContextWindow/4)
	}
	if m.ImagesSource == "" {
		r := provider.ResolveImages(m.Name, m.ImagesConfigured, nil)
		m.Images, m.ImagesSource = r.Yes, r.Source
	}
	if !m.PricesSet {
		m = m.withBuiltinPrices()
	}
	if m.Currency == "" {
		m.Currency = DefaultCurrency
	}
	return m
}

// NormalizeModels returns the models list with defaults filled in and the
// name of the default model: def if given (added to the list when missing),
// else the first model. An empty list with no default yields no models.
func NormalizeModels(models []Model, def string) ([]Model, string) {
	out := make([]Model, 0, len(models)+1)
	found := false
	for _, m := range models {
		out = append(out, m.WithDefaults())
		found = found || m.Name == def
	}
	if def != "" && !found {
		out = append([]Model{Model{Name: def}.WithDefaults()}, out...)
	}
	if def == "" && len(out) > 0 {
		def = out[0].Name
	}
	return out, def
}

// ParseModels reads a models list in the CROW_MODELS format: entries
// separated by ",", each a model name followed by ";key=value" attributes:
//
//	gpt-4o-mini;window=128000;image;in=0.15;out=0.60, qwen3:8b;window=32768;title=Qwen 3 8B
//
// Attributes: window (tokens), reserve (output tokens kept free), image (the
// model reads images; image=false: it does not; unset: its endpoint or its
// family decides, see Model.ImagesConfigured), in, out and cached (prices
// per million tokens: input, output, cached input), currency (ISO 4217, default USD), title (display name),
// tokenizer (the encoding compaction counts with: auto, estimate,
// o200k_base, cl100k_base), reasoning (what goes back of the model's
// reasoning: auto, strip, echo, require), think (where an inline <think>
// block starts: auto, tag, open), tool_ids (auto, as-is, mistral), edit
// (the edit tool it gets: edit_file or apply_patch; default by name).
func ParseModels(spec string) ([]Model, error) {
	var models []Model
	seen := make(map[string]bool)
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		fields := strings.Split(entry, ";")
		m := Model{Name: strings.TrimSpace(fields[0])}
		if m.Name == "" {
			return nil, fmt.Errorf("model entry %q has no name", entry)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("model %q is listed twice", m.Name)
		}
		seen[m.Name] = true
		for _, f := range fields[1:] {
			if err := m.setAttr(strings.TrimSpace(f)); err != nil {
				return nil, fmt.Errorf("model %q: %w", m.Name, err)
			}
		}
		models = append(models, m)
	}
	return models, nil
}

func (m *Model) setAttr(attr string) error {
	key, val, hasVal := strings.Cut(attr, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	positiveInt := func() (int, error) {
		n, err := strconv.Atoi(val)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%s=%q: want a positive number of tokens", key, val)
		}
		return n, nil
	}
	price := func() (float64, error) {
		p, err := strconv.ParseFloat(val, 64)
		if err != nil || !FiniteAmount(p) {
			return 0, fmt.Errorf("%s=%q: want a price per million tokens of 0 or more (not NaN or infinite), e.g. 0.15", key, val)
		}
		return p, nil
	}
	var err error
	switch key {
	case "":
		return nil // tolerate "a;;b" and a trailing ";"
	case "window":
		m.ContextWindow, err = positiveInt()
	case "reserve":
		m.OutputReserve, err = positiveInt()
	case "image", "images":
		yes := true
		if hasVal {
			yes, err = strconv.ParseBool(val)
			if err != nil {
				err = fmt.Errorf("image=%q: want true or false", val)
			}
		}
		m.ImagesConfigured = &yes
	case "in":
		m.InputPrice, err = price()
		m.PricesSet = true
	case "out":
		m.OutputPrice, err = price()
		m.PricesSet = true
	case "cached":
		m.CachedInputPrice, err = price()
		m.PricesSet = true
	case "currency":
		if len(val) != 3 {
			return fmt.Errorf("currency=%q: want an ISO 4217 code such as USD", val)
		}
		m.Currency = strings.ToUpper(val)
	case "title":
		m.Title = val
	case "tokenizer":
		if _, err := compaction.NewCounter(m.Name, val); err != nil {
			return err
		}
		m.Tokenizer = val
	case "reasoning":
		h, ok := provider.ParseReasoningHistory(val)
		if !ok {
			return fmt.Errorf("reasoning=%q: want auto, strip, echo or require", val)
		}
		m.ReasoningHistory = h
	case "think":
		v, ok := provider.ParseInlineThink(val)
		if !ok {
			return fmt.Errorf("think=%q: want auto, tag or open", val)
		}
		m.InlineThink = v
	case "tool_ids":
		st, ok := provider.ParseToolCallIDStyle(val)
		if !ok {
			return fmt.Errorf("tool_ids=%q: want auto, as-is or mistral", val)
		}
		m.ToolCallIDs = st
	case "edit":
		if val != tool.EditFileTool && val != tool.ApplyPatchTool {
			return fmt.Errorf("edit=%q: want edit_file or apply_patch", val)
		}
		m.EditTool = val
	default:
		return fmt.Errorf("unknown attribute %q (known: window, reserve, image, in, out, cached, currency, title, tokenizer, reasoning, think, tool_ids, edit)", key)
	}
	if err != nil {
		return err
	}
	if m.OutputReserve > 0 && m.ContextWindow > 0 && m.OutputReserve >= m.ContextWindow {
		return fmt.Errorf("reserve %d must be smaller than window %d", m.OutputReserve, m.ContextWindow)
	}
	return nil
}

// Provider is one model endpoint: the client that streams from it, and its
// base URL, which names it in the window cache.
type Provider struct {
	Client   provider.Client
	Endpoint string
	// SilentTruncation: the endpoint cuts a prompt longer than its context
	// without an error (Ollama past num_ctx), so the usage it reports is
	// checked against what was sent (see detectTruncation).
	SilentTruncation bool
	// Discover asks the endpoint for a model's context window (nil: it
	// cannot be asked); used for models without a configured window.
	Discover func(ctx context.Context, model string) (provider.DiscoveredWindow, error)
	// DiscoverImages asks the endpoint whether a model reads images (nil:
	// it cannot be asked); used for models without a configured flag.
	DiscoverImages func(ctx context.Context, model string) (provider.DiscoveredImages, error)
}

// What a model request costs, and the token usage of a whole prompt turn
// (the prompt response's `usage`, ACP unstable).

// price is a model's public list price in USD per million tokens.
type price struct{ in, cached, out float64 }

// BuiltinPricesRead is the day the built-in prices were read. They are
// OpenAI's standard (not batch, not priority) list prices: OpenAI's
// pricing page as copied on deploybase.ai/articles/openai-pricing (March
// 2026), cached input at OpenAI's discount per family (90% GPT-5, 75%
// GPT-4.1 and o3/o4-mini, 50% GPT-4o; the adk-model crate's OpenAI table,
// March 2026). Prices change: a model's prices in the configuration
// (input_price, output_price, cached_input_price; in=, out=, cached= in
// CROW_MODELS) replace these, and prices of 0 switch cost off.
const BuiltinPricesRead = "2026-11-28"

var builtinPrices = map[string]price{
	"gpt-5":        {in: 1.25, cached: 0.125, out: 10},
	"gpt-5-mini":   {in: 0.25, cached: 0.025, out: 2},
	"gpt-5-nano":   {in: 0.05, cached: 0.005, out: 0.40},
	"gpt-4.1":      {in: 2, cached: 0.50, out: 8},
	"gpt-4.1-mini": {in: 0.40, cached: 0.10, out: 1.60},
	"gpt-4.1-nano": {in: 0.10, cached: 0.025, out: 0.40},
	"gpt-4o":       {in: 2.50, cached: 1.25, out: 10},
	"gpt-4o-mini":  {in: 0.15, cached: 0.075, out: 0.60},
	"o3":           {in: 2, cached: 0.50, out: 8},
	"o4-mini":      {in: 1.10, cached: 0.275, out: 4.40},
}

// datedSnapshot is the date OpenAI appends to a pinned snapshot's name.
//
// Compiled on first use: package initialisers run before initialize is
// answered (TestStartupInitCost).
var datedSnapshot = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`) })

// builtinPrice finds a model's list price by its name as OpenAI spells it,
// after a router's "openai/" prefix and without a snapshot date
// ("openai/gpt-4o-2024-08-06" is gpt-4o). Other names have none: a name
// that merely starts like a known one (gpt-4o-mini-tts) is another model.
func builtinPrice(name string) (price, bool) {
	name = strings.ToLower(name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	p, ok := builtinPrices[datedSnapshot().ReplaceAllString(name, "")]
	return p, ok
}

// BuiltinPrice is the built-in list price of a model, in USD per million
// tokens (input, cached input, output); ok is false for a model without one.
func BuiltinPrice(name string) (in, cached, out float64, ok bool) {
	p, ok := builtinPrice(name)
	return p.in, p.cached, p.out, ok
}

// withBuiltinPrices gives a model the configuration did not price its
// built-in list price, in USD.
func (m Model) withBuiltinPrices() Model {
	p, ok := builtinPrice(m.Name)
	if !ok || (m.Currency != "" && m.Currency != DefaultCurrency) {
		return m
	}
	m.InputPrice, m.CachedInputPrice, m.OutputPrice, m.Currency = p.in, p.cached, p.out, DefaultCurrency
	return m
}

// Cost is the price of one request: uncached prompt tokens at the input
// price, cached ones at the cached-input price (the input price when none
// is set), completion tokens at the output price.
func (m Model) Cost(u provider.Usage) float64 {
	cached := min(max(u.CachedTokens, 0), u.PromptTokens)
	cachedPrice := m.CachedInputPrice
	if cachedPrice == 0 {
		cachedPrice = m.InputPrice
	}
	return (float64(u.PromptTokens-cached)*m.InputPrice + float64(cached)*cachedPrice + float64(u.CompletionTokens)*m.OutputPrice) / 1e6
}

// FiniteAmount reports whether v is an amount JSON can hold and a cost can
// be: finite, 0 or more.
func FiniteAmount(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// FiniteCosts is cost without the amounts finiteAmount refuses (nil when
// none is left).
func FiniteCosts(cost map[string]float64) map[string]float64 {
	var out map[string]float64
	for currency, v := range cost {
		if FiniteAmount(v) {
			if out == nil {
				out = make(map[string]float64, len(cost))
			}
			out[currency] = v
		}
	}
	return out
}

// TurnUsage adds up the usage the provider reported for a turn's model
// requests; the running turn holds it (turn.usage).
type TurnUsage struct {
	mu       sync.Mutex
	requests int
	sum      provider.Usage
}

// Add counts one request's reported usage.
func (t *TurnUsage) Add(u provider.Usage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	t.sum.PromptTokens += u.PromptTokens
	t.sum.CompletionTokens += u.CompletionTokens
	t.sum.CachedTokens += u.CachedTokens
	t.sum.ReasoningTokens += u.ReasoningTokens
}

// Wire is the turn's usage for the prompt response: the sums over its
// model requests (each request's prompt counts again, as the provider
// bills it); nil when the provider reported none.
func (t *TurnUsage) Wire() *acp.Usage {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.requests == 0 {
		return nil
	}
	u := &acp.Usage{
		InputTokens:  t.sum.PromptTokens,
		OutputTokens: t.sum.CompletionTokens,
		TotalTokens:  t.sum.PromptTokens + t.sum.CompletionTokens,
	}
	if t.sum.CachedTokens > 0 {
		u.CachedReadTokens = &t.sum.CachedTokens
	}
	if t.sum.ReasoningTokens > 0 {
		u.ThoughtTokens = &t.sum.ReasoningTokens
	}
	return u
}

// learnedPrefix starts the source of a window learned from what the
// endpoint did (a refusal, a truncation). In the process that saw it, such
// a window beats every other, a configured one included (the request could
// not be sent otherwise); from the cache, a later process takes it over a
// built-in or assumed window, never over a configured one.
const LearnedPrefix = "learned from "

// MinLearnedWindow is the smallest context window crow-acp believes an
// endpoint: a smaller one, discovered or learned, is ignored (and logged).
// No model server runs a chat model in less (llama.cpp's -c 512 is the
// smallest seen), while one lying error or usage report ("maximum context
// length is 300 tokens", prompt_tokens 1, n_ctx 1) would otherwise make
// every later prompt refused.
const MinLearnedWindow = 512

// learnedWindow is a context window the endpoint told or showed us, which
// beats the built-in or assumed one: found by asking it (discovery), or
// shown by a refusal or a silent truncation.
type learnedWindow struct {
	tokens int
	source string // for the user and `doctor`: where it was learned
}

// WithLearnedWindow applies what was learned about m's window.
func (a *Models) WithLearnedWindow(m Model) Model {
	if c := a.discovery.cached; c != nil {
		<-c // the cached windows are read (bounded: 2 s a model)
	}
	m = a.withImages(m)
	a.mu.Lock()
	w, ok := a.windows[m.Name]
	a.mu.Unlock()
	if !ok || w.tokens <= 0 {
		return m
	}
	m.ContextWindow, m.WindowAssumed, m.WindowSource = w.tokens, false, w.source
	if m.OutputReserve >= w.tokens/2 {
		m.OutputReserve = min(DefaultOutputReserve, w.tokens/4)
	}
	return m
}

// LearnWindow records model's real window; it reports whether it changed.
// The caller checked it against windowFloor.
func (a *Models) LearnWindow(model string, tokens int, source string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.windows[model]; ok && old.tokens == tokens {
		return false
	}
	a.windows[model] = learnedWindow{tokens: tokens, source: source}
	return true
}

// acceptedKey names an endpoint and model in Agent.accepted.
func (a *Models) acceptedKey(m Model) string {
	return a.ProviderOf(m).Endpoint + "\x00" + m.Name
}

// NoteAccepted records the size of a prompt m's endpoint accepted, by its
// own count: a window it tells later is never believed below it.
func (a *Models) NoteAccepted(m Model, res *provider.Result) {
	if res == nil || res.Usage == nil || res.Usage.PromptTokens <= 0 {
		return
	}
	key := a.acceptedKey(m)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.accepted == nil {
		a.accepted = make(map[string]int)
	}
	a.accepted[key] = max(a.accepted[key], res.Usage.PromptTokens)
}

// WindowFloor is the smallest window m's endpoint may claim: MinLearnedWindow,
// or the largest prompt it accepted in this process. why names it.
func (a *Models) WindowFloor(m Model) (floor int, why string) {
	if accepted := a.AcceptedFor(m); accepted > MinLearnedWindow {
		return accepted, fmt.Sprintf("the %d-token prompt this endpoint already accepted", accepted)
	}
	return MinLearnedWindow, fmt.Sprintf("the %d tokens crow-acp takes as the smallest real window", MinLearnedWindow)
}

// AcceptedFor is the largest prompt m's endpoint accepted in this process
// (0: none reported).
func (a *Models) AcceptedFor(m Model) int {
	key := a.acceptedKey(m)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accepted[key]
}

// Believable reports whether a window the endpoint claims for m is at or
// over its floor; one under it is logged and ignored.
func (a *Models) Believable(m Model, tokens int, source string) bool {
	floor, why := a.WindowFloor(m)
	if tokens >= floor {
		return true
	}
	a.log.Warn("ignoring a context window the endpoint claims: it is under "+why,
		zap.String("model", m.Name), zap.Int("window", tokens), zap.Int("floor", floor), zap.String("source", source))
	return false
}

// discovery runs the window lookups of models without a configured window,
// in the background: session/new and session/load never wait for them.
type discovery struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// cached is closed once the windows earlier runs cached are read
	// and applied: a model's window is read only after it
	// (withLearnedWindow), so none is used before its cached one.
	cached chan struct{}
	// pending holds, for each model whose lookup may run, a channel
	// closed when it ends. Written only by startDiscovery, before the
	// agent serves anything.
	pending map[string]chan struct{}
	// pendingImages is pending for the image lookups.
	pendingImages map[string]chan struct{}
}

// StartDiscovery gives every model the window an earlier run cached for
// it, when that applies (cachedApplies; one small query per model, in the
// background: the store may still be opening, and initialize does not
// wait for it), and looks up the window of models that have none
// configured and none cached by asking their endpoint (Provider.Discover),
// also in the background: what is found becomes the model's window once it
// arrives; until then the model is treated as before (no automatic
// compaction). A configured window gives way only to one the endpoint
// proves in this process by refusing or truncating a prompt.
func (a *Models) StartDiscovery() {
	ctx, cancel := context.WithCancel(context.Background())
	a.discovery.cancel = cancel
	a.discovery.cached = make(chan struct{})
	type lookup struct {
		p    Provider
		m    Model
		done chan struct{} // nil: never asked
	}
	var lookups []lookup
	for _, m := range a.models {
		l := lookup{p: a.ProviderOf(m), m: m}
		if m.WindowAssumed && l.p.Discover != nil {
			if a.discovery.pending == nil {
				a.discovery.pending = make(map[string]chan struct{})
			}
			l.done = make(chan struct{})
			a.discovery.pending[m.Name] = l.done
		}
		lookups = append(lookups, l)
	}
	a.startImageDiscovery(ctx)
	a.discovery.wg.Add(1)
	GoSafe(a.log, "reading the cached context windows", func() {
		defer a.discovery.wg.Done()
		asked := 0
		defer func() { // a panic below must not leave a waiter waiting
			for _, l := range lookups[asked:] {
				if l.done != nil {
					close(l.done)
				}
			}
		}()
		found := make([]bool, len(lookups))
		func() {
			defer close(a.discovery.cached)
			for i, l := range lookups {
				found[i] = a.cachedWindow(ctx, l.p, l.m)
			}
		}()
		for i, l := range lookups {
			asked = i + 1
			switch {
			case l.done == nil:
			case found[i]:
				close(l.done)
			default:
				a.discovery.wg.Add(1)
				GoSafe(a.log, "discovering the context window of "+l.m.Name, func() {
					defer a.discovery.wg.Done()
					defer close(l.done)
					a.discoverWindow(ctx, l.p, l.m)
				})
			}
		}
	})
}

// cachedWindow applies the cached window of m, if there is one that
// applies; it reports whether it did.
func (a *Models) cachedWindow(ctx context.Context, p Provider, m Model) bool {
	if a.cache == nil || p.Endpoint == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	w, err := a.cache.ModelWindow(ctx, p.Endpoint, m.Name)
	if err != nil || !cachedApplies(m, w) {
		if err == nil && w.Tokens < MinLearnedWindow {
			a.log.Warn("ignoring a cached context window under the floor (crow-acp config forget-window clears it)",
				zap.String("model", m.Name), zap.Int("window", w.Tokens), zap.Int("floor", MinLearnedWindow), zap.String("source", w.Source))
		}
		return false
	}
	return a.learnWindowIfUnknown(m.Name, w.Tokens, w.Source)
}

// cachedApplies reports whether a window an earlier process cached for m
// (with its defaults filled) is used: never over a configured window, never
// under MinLearnedWindow; one learned from a refusal or truncation over a
// built-in or assumed window, one discovered by asking only over an
// assumed one.
func cachedApplies(m Model, w persistence.ModelWindow) bool {
	switch {
	case m.WindowSource == WindowConfigured || w.Tokens < MinLearnedWindow:
		return false
	case m.WindowAssumed:
		return true
	default:
		return strings.HasPrefix(w.Source, LearnedPrefix)
	}
}

// EffectiveWindow is the context window a new process gives model (name
// and configured window, 0 for none) and where it comes from, with cached
// the window an earlier process cached for it (nil: none): what `config
// show` and `doctor` print.
func EffectiveWindow(model string, configured int, cached *persistence.ModelWindow) (tokens int, source string) {
	m := Model{Name: model, ContextWindow: configured}.WithDefaults()
	if cached != nil && cachedApplies(m, *cached) {
		return cached.Tokens, cached.Source
	}
	return m.ContextWindow, m.WindowSource
}

func (a *Models) discoverWindow(ctx context.Context, p Provider, m Model) {
	w, err := p.Discover(ctx, m.Name)
	if err != nil {
		a.log.Info("the endpoint does not tell the model's context window; configure it (context_window)",
			zap.String("model", m.Name), zap.Error(err))
		a.mu.Lock()
		if a.silent == nil {
			a.silent = make(map[string]bool)
		}
		a.silent[m.Name] = true
		a.mu.Unlock()
		return
	}
	source := "discovered: " + w.Source
	if !a.Believable(m, w.Tokens, source) {
		return
	}
	if a.learnWindowIfUnknown(m.Name, w.Tokens, source) {
		a.log.Info("context window discovered", zap.String("model", m.Name), zap.Int("window", w.Tokens), zap.String("source", w.Source))
		a.CacheWindow(ctx, m, w.Tokens, source)
	}
}

// CacheWindow keeps a window the endpoint told us for the next process.
func (a *Models) CacheWindow(ctx context.Context, m Model, tokens int, source string) {
	p := a.ProviderOf(m)
	if a.cache == nil || p.Endpoint == "" {
		return
	}
	w := &persistence.ModelWindow{Endpoint: p.Endpoint, Model: m.Name, Tokens: tokens, Source: source}
	if err := a.cache.SetModelWindow(context.WithoutCancel(ctx), w); err != nil {
		a.log.Warn("cannot cache the model's context window", zap.String("model", m.Name), zap.Error(err))
	}
}

// learnWindowIfUnknown records a window unless one was learned already (a
// refusal or a truncation, which are fresher than a lookup).
func (a *Models) learnWindowIfUnknown(model string, tokens int, source string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.windows[model]; ok {
		return false
	}
	a.windows[model] = learnedWindow{tokens: tokens, source: source}
	return true
}

// AwaitDiscovery waits for the window lookup of model, if one is still
// running, before a model request is planned: the request goes to the
// same endpoint, and with the window it is compacted (and its context
// meter drawn) right from the first turn. The lookup is bounded (5 s in
// all, DiscoverWindow), so this is too; session/new and session/load never
// wait.
func (a *Models) AwaitDiscovery(ctx context.Context, model string) {
	done, ok := a.discovery.pending[model]
	if !ok {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// StopDiscovery cancels lookups still running and waits for them.
func (a *Models) StopDiscovery() {
	if a.discovery.cancel != nil {
		a.discovery.cancel()
	}
	a.discovery.wg.Wait()
}

// ProviderOf returns the provider that serves m (the default one, key "",
// for a model that names none or an unknown one).
func (a *Models) ProviderOf(m Model) Provider {
	if p, ok := a.providers[m.Provider]; ok {
		return p
	}
	return a.providers[""]
}

// ClientFor returns the client of the endpoint that serves m: each model
// of the list may live on another endpoint (an Ollama model next to an
// OpenRouter one), so the session's current model decides, request by
// request.
func (a *Models) ClientFor(m Model) provider.Client {
	if p, ok := a.providers[m.Provider]; ok && p.Client != nil {
		return p.Client
	}
	return a.client
}

// Named returns the configured model with that name; unknown names (a model
// removed from the configuration since the session chose it) fall back to
// the default model.
func (a *Models) Named(name string) Model {
	for _, m := range a.models {
		if m.Name == name {
			return a.WithLearnedWindow(m)
		}
	}
	for _, m := range a.models {
		if m.Name == a.def {
			return a.WithLearnedWindow(m)
		}
	}
	return a.WithLearnedWindow(Model{Name: name}.WithDefaults())
}

// TakesImages decides promptCapabilities.image: images are advertised
// when the default model reads them (configured, told by its endpoint if
// it already answered, or by its family: a bare gpt-4o does) or a model is
// configured to read them.
func (a *Models) TakesImages() bool {
	for _, m := range a.models {
		if m.Name == a.def && a.withImages(m).Images {
			return true
		}
		if c := m.ImagesConfigured; c != nil && *c {
			return true
		}
	}
	return false
}

// startImageDiscovery asks the endpoint of every model with no configured
// image flag whether it reads images, in the background (bounded as
// provider.DiscoverImages is); the answer, when there is one, wins over the
// model's family once it arrives.
func (a *Models) startImageDiscovery(ctx context.Context) {
	for _, m := range a.models {
		p := a.ProviderOf(m)
		if m.ImagesConfigured != nil || p.DiscoverImages == nil {
			continue
		}
		if a.discovery.pendingImages == nil {
			a.discovery.pendingImages = make(map[string]chan struct{})
		}
		if _, dup := a.discovery.pendingImages[m.Name]; dup {
			continue
		}
		done := make(chan struct{})
		a.discovery.pendingImages[m.Name] = done
		a.discovery.wg.Add(1)
		GoSafe(a.log, "discovering whether "+m.Name+" reads images", func() {
			defer a.discovery.wg.Done()
			defer close(done)
			// The window's lookup asks the same routes first: one request
			// at a time to a local server, and the window (which sizes
			// every request) is never held up by this one.
			if w, ok := a.discovery.pending[m.Name]; ok {
				select {
				case <-w:
				case <-ctx.Done():
					return
				}
			}
			// An endpoint that answered none of the window's requests has
			// no metadata routes: it is not asked the same routes again.
			a.mu.Lock()
			silent := a.silent[m.Name]
			a.mu.Unlock()
			if silent {
				a.log.Debug("the endpoint told no window: whether the model reads images is its family's answer", zap.String("model", m.Name))
				return
			}
			d, err := p.DiscoverImages(ctx, m.Name)
			if err != nil {
				a.log.Debug("the endpoint does not say whether the model reads images; its family decides",
					zap.String("model", m.Name), zap.Error(err))
				return
			}
			r := provider.ResolveImages(m.Name, nil, &d)
			a.mu.Lock()
			if a.images == nil {
				a.images = make(map[string]provider.ImageSupport)
			}
			a.images[m.Name] = r
			a.mu.Unlock()
			a.log.Info("image support discovered", zap.String("model", m.Name), zap.Bool("images", r.Yes), zap.String("source", r.Source))
		})
	}
}

// AwaitImages waits for the image lookup of model, if one is still
// running (bounded: 5 s in all), before a prompt holding an image is
// checked against what the model reads.
func (a *Models) AwaitImages(ctx context.Context, model string) {
	done, ok := a.discovery.pendingImages[model]
	if !ok {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// SettleImages waits, at most wait, for the image lookup of the default
// model when what is known so far advertises no images: a local server
// answers in milliseconds, and initialize's answer decides whether the
// editor offers to attach images at all. A model whose family reads
// images does not wait.
func (a *Models) SettleImages(ctx context.Context, wait time.Duration) {
	if a.TakesImages() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	a.AwaitImages(ctx, a.def)
}

// withImages applies what the endpoint said about m's images to a model
// with no configured flag.
func (a *Models) withImages(m Model) Model {
	if m.ImagesConfigured != nil {
		return m
	}
	a.mu.Lock()
	r, ok := a.images[m.Name]
	a.mu.Unlock()
	if ok {
		m.Images, m.ImagesSource = r.Yes, r.Source
	}
	return m
}

// GoSafe runs fn on its own goroutine. A panic in it (a bug) is logged
// with its stack and ends only that work: an unrecovered panic on any
// goroutine would end the process, and with it every session the editor
// has open. Every goroutine the agent starts goes through here or, when a
// request waits for its result, through acp.Safely directly (the turn).
func GoSafe(log *zap.Logger, what string, fn func()) {
	go func() {
		_ = acp.Safely(log, what, func() error { fn(); return nil })
	}()
}

// Models are the models a session may use, the endpoints that serve them
// and what this process learned of their context windows: configured,
// cached by an earlier run, discovered by asking the endpoint, or learned
// from a refusal or a silent truncation. Its lock guards only what was
// learned.
type Models struct {
	models    []Model
	def       string // the default model's name
	providers map[string]Provider
	client    provider.Client // the endpoint of models naming no provider
	cache     persistence.WindowCache
	log       *zap.Logger

	mu        sync.Mutex
	windows   map[string]learnedWindow         // real context windows learned from the endpoint, by model
	silent    map[string]bool                  // models whose endpoint told no window when asked (its metadata routes are not asked again)
	accepted  map[string]int                   // the largest prompt each endpoint and model accepted
	images    map[string]provider.ImageSupport // whether a model reads images, as its endpoint said
	discovery discovery                        // window lookups running in the background
}

// NewModels returns the catalogue of models served by providers, def
// naming the default one and client the endpoint of models naming no
// provider; windows (nil: none) keeps the windows endpoints told across
// processes.
func NewModels(models []Model, def string, providers map[string]Provider, client provider.Client, windows persistence.WindowCache, log *zap.Logger) *Models {
	return &Models{models: models, def: def, providers: providers, client: client, cache: windows, log: log, windows: make(map[string]learnedWindow)}
}

// Learned reports whether a window was learned for the model in this
// process.
func (a *Models) Learned(model string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.windows[model]
	return ok
}

// WaitDiscovery waits until the window lookups have ended (without
// cancelling them, as stopDiscovery does).
func (a *Models) WaitDiscovery() { a.discovery.wg.Wait() }
