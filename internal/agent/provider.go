package agent

import (
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// providerOf returns the provider that serves m (the default one, key "",
// for a model that names none or an unknown one).
func (a *Agent) providerOf(m request.Model) request.Provider {
	if p, ok := a.cfg.Providers[m.Provider]; ok {
		return p
	}
	return a.cfg.Providers[""]
}

// clientFor returns the client of the endpoint that serves m: each model
// of the list may live on another endpoint (an Ollama model next to an
// OpenRouter one), so the session's current model decides, request by
// request.
func (a *Agent) clientFor(m request.Model) provider.Client {
	if p, ok := a.cfg.Providers[m.Provider]; ok && p.Client != nil {
		return p.Client
	}
	return a.model
}

// model returns the configured model with that name; unknown names (a model
// removed from the configuration since the session chose it) fall back to
// the default model.
func (a *Agent) modelNamed(name string) request.Model {
	for _, m := range a.cfg.Models {
		if m.Name == name {
			return a.withLearnedWindow(m)
		}
	}
	for _, m := range a.cfg.Models {
		if m.Name == a.cfg.Model {
			return a.withLearnedWindow(m)
		}
	}
	return a.withLearnedWindow(request.Model{Name: name}.WithDefaults())
}

// sessionModel is the model a session uses now.
func (a *Agent) sessionModel(s *persistence.Session) request.Model {
	return a.modelNamed(decodeMeta(s.Metadata).Model)
}

// anyModelTakesImages decides promptCapabilities.image: images are
// advertised only when a configured model can read them.
func (a *Agent) anyModelTakesImages() bool {
	for _, m := range a.cfg.Models {
		if m.Images {
			return true
		}
	}
	return false
}
