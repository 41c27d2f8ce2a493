package agent

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

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
}

// startDiscovery gives every model the window an earlier run cached for
// it, when that applies (cachedApplies; one small query per model, in the
// background: the store may still be opening, and initialize does not
// wait for it), and looks up the window of models that have none
// configured and none cached by asking their endpoint (Provider.Discover),
// also in the background: what is found becomes the model's window once it
// arrives; until then the model is treated as before (no automatic
// compaction). A configured window gives way only to one the endpoint
// proves in this process by refusing or truncating a prompt.
func (a *Agent) startDiscovery() {
	ctx, cancel := context.WithCancel(context.Background())
	a.discovery.cancel = cancel
	a.discovery.cached = make(chan struct{})
	type lookup struct {
		p    request.Provider
		m    request.Model
		done chan struct{} // nil: never asked
	}
	var lookups []lookup
	for _, m := range a.cfg.Models {
		l := lookup{p: a.providerOf(m), m: m}
		if m.WindowAssumed && l.p.Discover != nil {
			if a.discovery.pending == nil {
				a.discovery.pending = make(map[string]chan struct{})
			}
			l.done = make(chan struct{})
			a.discovery.pending[m.Name] = l.done
		}
		lookups = append(lookups, l)
	}
	a.discovery.wg.Add(1)
	goSafe(a.log, "reading the cached context windows", func() {
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
				goSafe(a.log, "discovering the context window of "+l.m.Name, func() {
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
func (a *Agent) cachedWindow(ctx context.Context, p request.Provider, m request.Model) bool {
	if a.cfg.Windows == nil || p.Endpoint == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	w, err := a.cfg.Windows.ModelWindow(ctx, p.Endpoint, m.Name)
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
func cachedApplies(m request.Model, w persistence.ModelWindow) bool {
	switch {
	case m.WindowSource == request.WindowConfigured || w.Tokens < MinLearnedWindow:
		return false
	case m.WindowAssumed:
		return true
	default:
		return strings.HasPrefix(w.Source, learnedPrefix)
	}
}

// EffectiveWindow is the context window a new process gives model (name
// and configured window, 0 for none) and where it comes from, with cached
// the window an earlier process cached for it (nil: none): what `config
// show` and `doctor` print.
func EffectiveWindow(model string, configured int, cached *persistence.ModelWindow) (tokens int, source string) {
	m := request.Model{Name: model, ContextWindow: configured}.WithDefaults()
	if cached != nil && cachedApplies(m, *cached) {
		return cached.Tokens, cached.Source
	}
	return m.ContextWindow, m.WindowSource
}

func (a *Agent) discoverWindow(ctx context.Context, p request.Provider, m request.Model) {
	w, err := p.Discover(ctx, m.Name)
	if err != nil {
		a.log.Info("the endpoint does not tell the model's context window; configure it (context_window)",
			zap.String("model", m.Name), zap.Error(err))
		return
	}
	source := "discovered: " + w.Source
	if !a.believable(m, w.Tokens, source) {
		return
	}
	if a.learnWindowIfUnknown(m.Name, w.Tokens, source) {
		a.log.Info("context window discovered", zap.String("model", m.Name), zap.Int("window", w.Tokens), zap.String("source", w.Source))
		a.cacheWindow(ctx, m, w.Tokens, source)
	}
}

// cacheWindow keeps a window the endpoint told us for the next process.
func (a *Agent) cacheWindow(ctx context.Context, m request.Model, tokens int, source string) {
	p := a.providerOf(m)
	if a.cfg.Windows == nil || p.Endpoint == "" {
		return
	}
	w := &persistence.ModelWindow{Endpoint: p.Endpoint, Model: m.Name, Tokens: tokens, Source: source}
	if err := a.cfg.Windows.SetModelWindow(context.WithoutCancel(ctx), w); err != nil {
		a.log.Warn("cannot cache the model's context window", zap.String("model", m.Name), zap.Error(err))
	}
}

// learnWindowIfUnknown records a window unless one was learned already (a
// refusal or a truncation, which are fresher than a lookup).
func (a *Agent) learnWindowIfUnknown(model string, tokens int, source string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.windows[model]; ok {
		return false
	}
	a.windows[model] = learnedWindow{tokens: tokens, source: source}
	return true
}

// awaitDiscovery waits for the window lookup of model, if one is still
// running, before a model request is planned: the request goes to the
// same endpoint, and with the window it is compacted (and its context
// meter drawn) right from the first turn. The lookup is bounded (5 s in
// all, DiscoverWindow), so this is too; session/new and session/load never
// wait.
func (a *Agent) awaitDiscovery(ctx context.Context, model string) {
	done, ok := a.discovery.pending[model]
	if !ok {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// stopDiscovery cancels lookups still running and waits for them.
func (a *Agent) stopDiscovery() {
	if a.discovery.cancel != nil {
		a.discovery.cancel()
	}
	a.discovery.wg.Wait()
}

// windowSource reports a model's effective context window and where it
// came from (Model.WindowSource), for tests.
func (a *Agent) windowSource(model string) (int, string) {
	m := a.modelNamed(model)
	return m.ContextWindow, m.WindowSource
}
