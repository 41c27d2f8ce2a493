package request

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

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
