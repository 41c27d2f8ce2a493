package agent

import (
	"math"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Cached prompt tokens are billed at the cached-input price, or at the
// input price when none is set; a cached count above the prompt is capped.
func TestModelCostCached(t *testing.T) {
	m := request.Model{InputPrice: 2, CachedInputPrice: 0.5, OutputPrice: 8}
	u := provider.Usage{PromptTokens: 1_000_000, CachedTokens: 600_000, CompletionTokens: 100_000}
	if got, want := m.Cost(u), 0.4*2+0.6*0.5+0.1*8; got != want {
		t.Errorf("cost = %v, want %v", got, want)
	}
	m.CachedInputPrice = 0
	if got, want := m.Cost(u), 1*2+0.1*8.0; got != want {
		t.Errorf("without a cached price: cost = %v, want %v", got, want)
	}
	u.CachedTokens = 5_000_000
	m.CachedInputPrice = 0.5
	if got, want := m.Cost(u), 0.5+0.8; got != want {
		t.Errorf("cached above the prompt: cost = %v, want %v", got, want)
	}
}

// Well-known models are priced out of the box, by their name as a router or
// a snapshot spells it; configured prices (even 0) win; other names and
// other currencies get none.
func TestBuiltinPrices(t *testing.T) {
	for name, want := range map[string]float64{
		"gpt-4o": 2.5, "openai/gpt-4o-2024-08-06": 2.5, "GPT-4.1-mini": 0.4, "gpt-5": 1.25,
		"gpt-4o-mini-tts": 0, "qwen3:8b": 0, "gpt-4o-mini-2024-07-18": 0.15,
	} {
		m := request.Model{Name: name}.WithDefaults()
		if m.InputPrice != want || (want > 0) != m.Priced() || (want > 0 && m.Currency != "USD") {
			t.Errorf("%s: input price %v (priced %v, %s), want %v", name, m.InputPrice, m.Priced(), m.Currency, want)
		}
	}
	models, err := request.ParseModels("gpt-4o;in=0;out=0, gpt-4o-mini;in=1, gpt-4.1;currency=EUR")
	if err != nil {
		t.Fatal(err)
	}
	models, _ = request.NormalizeModels(models, "")
	if models[0].Priced() {
		t.Errorf("prices of 0 switch cost off: %+v", models[0])
	}
	if m := models[1]; m.InputPrice != 1 || m.OutputPrice != 0 || m.CachedInputPrice != 0 {
		t.Errorf("a configured price replaces all built-in ones: %+v", m)
	}
	if models[2].Priced() {
		t.Errorf("built-in USD prices are not given to a model priced in EUR: %+v", models[2])
	}
}

// The prompt response's usage sums what the provider reported for the
// turn's requests, and is absent when it reported nothing.
func TestTurnUsage(t *testing.T) {
	var none *request.TurnUsage
	tu := &request.TurnUsage{}
	if tu.Wire() != nil || none.Wire() != nil {
		t.Fatal("usage before any request")
	}
	tu.Add(provider.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 80})
	tu.Add(provider.Usage{PromptTokens: 120, CompletionTokens: 5, ReasoningTokens: 3})
	u := tu.Wire()
	if u.InputTokens != 220 || u.OutputTokens != 15 || u.TotalTokens != 235 || *u.CachedReadTokens != 80 || *u.ThoughtTokens != 3 || u.CachedWriteTokens != nil {
		t.Fatalf("usage %+v", u)
	}
}

// A request's cost that is not a finite amount (a NaN price given to the
// agent directly, a price that overflows) leaves the session's total as
// it was, and the metadata still encodes with its mode: issue 37 item 8,
// where a NaN cost made the metadata stored empty. A price is refused
// unless a finite number of 0 or more.
func TestAddCostStaysFinite(t *testing.T) {
	m := sessionMeta{Mode: ModePlan}
	if got := m.addCost("USD", 0.25); got != 0.25 {
		t.Fatalf("first cost: total %v", got)
	}
	for _, c := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, math.MaxFloat64, math.MaxFloat64} {
		m.addCost("USD", c)
	}
	m.addCost("EUR", math.NaN())
	back := decodeMeta(encodeMeta(m))
	if back.Mode != ModePlan || !request.FiniteAmount(back.Cost["USD"]) || back.Cost["USD"] < 0.25 || len(back.Cost) != 1 {
		t.Fatalf("metadata after non-finite costs: %+v (encoded %s)", back, encodeMeta(m))
	}
	m.Cost["GBP"] = math.NaN() // however it got there, it is not stored
	if b := encodeMeta(m); b == nil || decodeMeta(b).Mode != ModePlan || strings.Contains(string(b), "GBP") {
		t.Fatalf("encoded with a NaN cost: %s", b)
	}
	for _, spec := range []string{"m;in=NaN", "m;out=Inf", "m;cached=-1", "m;in=1e400"} {
		if _, err := request.ParseModels(spec); err == nil || !strings.Contains(err.Error(), "NaN or infinite") {
			t.Errorf("%s: %v, want the price refused", spec, err)
		}
	}
}
