package request

import (
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

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

// finiteAmount reports whether v is an amount JSON can hold and a cost can
// be: finite, 0 or more.
func FiniteAmount(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// finiteCosts is cost without the amounts finiteAmount refuses (nil when
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

// turnUsage adds up the usage the provider reported for a turn's model
// requests; the running turn holds it (turn.usage).
type TurnUsage struct {
	mu       sync.Mutex
	requests int
	sum      provider.Usage
}

// add counts one request's reported usage.
func (t *TurnUsage) Add(u provider.Usage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	t.sum.PromptTokens += u.PromptTokens
	t.sum.CompletionTokens += u.CompletionTokens
	t.sum.CachedTokens += u.CachedTokens
	t.sum.ReasoningTokens += u.ReasoningTokens
}

// wire is the turn's usage for the prompt response: the sums over its
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
