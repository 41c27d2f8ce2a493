package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/internal/provider"
)

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
}

// providerOf returns the provider that serves m (the default one, key "",
// for a model that names none or an unknown one).
func (a *Agent) providerOf(m Model) Provider {
	if p, ok := a.cfg.Providers[m.Provider]; ok {
		return p
	}
	return a.cfg.Providers[""]
}

// clientFor returns the client of the endpoint that serves m: each model
// of the list may live on another endpoint (an Ollama model next to an
// OpenRouter one), so the session's current model decides, request by
// request.
func (a *Agent) clientFor(m Model) provider.Client {
	if p, ok := a.cfg.Providers[m.Provider]; ok && p.Client != nil {
		return p.Client
	}
	return a.model
}
