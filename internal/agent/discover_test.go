package agent

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestWindowDiscovery: a model without a configured window gets the one
// its endpoint tells (here llama.cpp's /props on the fake model), in the
// background: session/new does not wait for the lookup, even a slow one.
// The window is cached per endpoint and model in the store, and the next
// process uses the cache without asking the endpoint again.
func TestWindowDiscovery(t *testing.T) {
	store := newTestStore(t)
	m := fakemodel.Start()
	defer m.Close()
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: "local", Window: 16384})
	release := make(chan struct{})
	var asked atomic.Int32
	oc := provider.OpenAIConfig{BaseURL: m.URL()}
	discover := func(ctx context.Context, model string) (provider.DiscoveredWindow, error) {
		asked.Add(1)
		select {
		case <-release: // a slow endpoint
		case <-ctx.Done():
			return provider.DiscoveredWindow{}, ctx.Err()
		}
		return provider.DiscoverWindow(ctx, oc, model)
	}
	cfg := Config{Model: "local", NoTools: true, Windows: store,
		Providers: map[string]request.Provider{"": {Endpoint: m.URL(), Discover: discover}}}
	a := New(&recorder{}, store, provider.NewOpenAI(oc), cfg, nil)
	start := time.Now()
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if n, src := a.windowSource("local"); n != request.DefaultContextWindow || !strings.Contains(src, "assumed") {
		t.Fatalf("before the lookup ends: %d from %q", n, src)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("session/new waited for the window lookup")
	}
	close(release)
	a.models.WaitDiscovery()
	n, src := a.windowSource("local")
	if n != 16384 || src != "discovered: llama.cpp GET /props (default_generation_settings.n_ctx)" {
		t.Fatalf("discovered %d from %q", n, src)
	}
	if got := a.build.MeterFor(mustSession(t, a, s.SessionID)).Settings.Window; got != 16384 {
		t.Fatalf("compaction measures against %d, want the discovered window", got)
	}
	a.Close()

	// The next process: the cache answers, the endpoint is not asked.
	failing := func(context.Context, string) (provider.DiscoveredWindow, error) {
		asked.Add(1)
		return provider.DiscoveredWindow{}, errors.New("must not be asked")
	}
	before := asked.Load()
	cfg.Providers = map[string]request.Provider{"": {Endpoint: m.URL(), Discover: failing}}
	b := New(&recorder{}, store, provider.NewOpenAI(oc), cfg, nil)
	defer b.Close()
	b.models.WaitDiscovery()
	if n, src := b.windowSource("local"); n != 16384 || !strings.HasPrefix(src, "discovered: llama.cpp") {
		t.Fatalf("from the cache: %d from %q", n, src)
	}
	if asked.Load() != before {
		t.Fatal("the endpoint was asked although the window was cached")
	}
}

// TestFirstRequestWaitsForDiscovery: a turn started while the window lookup
// still runs waits for it before its model request, so the first turn is
// already metered (and would be compacted) against the discovered window.
func TestFirstRequestWaitsForDiscovery(t *testing.T) {
	store := newTestStore(t)
	m := fakemodel.Start()
	defer m.Close()
	m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: "local", Window: 16384})
	m.Enqueue(fakemodel.Reply{Text: "hello"})
	release := make(chan struct{})
	oc := provider.OpenAIConfig{BaseURL: m.URL()}
	discover := func(ctx context.Context, model string) (provider.DiscoveredWindow, error) {
		select {
		case <-release: // the lookup ends only once the turn has begun
		case <-ctx.Done():
			return provider.DiscoveredWindow{}, ctx.Err()
		}
		return provider.DiscoverWindow(ctx, oc, model)
	}
	rec := &recorder{}
	cfg := Config{Model: "local", NoTools: true, Windows: store,
		Providers: map[string]request.Provider{"": {Endpoint: m.URL(), Discover: discover}}}
	a := New(rec, store, provider.NewOpenAI(oc), cfg, nil)
	defer a.Close()
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := prompt(a, s.SessionID, "hi")
		done <- err
	}()
	for len(rec.titles()) == 0 { // the turn has begun
		select {
		case err := <-done:
			t.Fatalf("the turn ended before the lookup: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var sizes []int
	for _, u := range rec.updates {
		if u.UsageUpdate != nil {
			sizes = append(sizes, u.UsageUpdate.Size)
		}
	}
	if len(sizes) == 0 || sizes[0] != 16384 {
		t.Fatalf("usage sizes %v, want the discovered 16384 from the first turn on", sizes)
	}
}

// TestConfiguredWindowIsNotDiscovered: a configured window is the truth;
// the endpoint is not asked.
func TestConfiguredWindowIsNotDiscovered(t *testing.T) {
	var asked atomic.Int32
	discover := func(context.Context, string) (provider.DiscoveredWindow, error) {
		asked.Add(1)
		return provider.DiscoveredWindow{Tokens: 999999, Source: "x"}, nil
	}
	a, _, _ := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: 8192}},
		Providers: map[string]request.Provider{"": {Discover: discover}}})
	a.models.StopDiscovery()
	if n, _ := a.windowSource("m"); n != 8192 || asked.Load() != 0 {
		t.Fatalf("window %d, asked %d times", n, asked.Load())
	}
}

// windowSource reports a model's effective context window and where it
// came from (Model.WindowSource), for tests.
func (a *Agent) windowSource(model string) (int, string) {
	m := a.models.Named(model)
	return m.ContextWindow, m.WindowSource
}
