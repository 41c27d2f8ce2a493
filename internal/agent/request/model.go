package request

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/provider"
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
