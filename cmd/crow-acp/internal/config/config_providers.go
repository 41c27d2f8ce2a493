package config

import (
	"context"
	"net/url"
	"os"
	"strings"

	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// resolveProviders reads every [providers.NAME] table.
func (c *Settings) resolveProviders(fc fileConfig, getenv func(string) string) error {
	c.providers = make(map[string]providerSpec, len(fc.Providers))
	for name, p := range fc.Providers {
		spec := providerSpec{API: deref(p.API, apiChat), BaseURL: deref(p.BaseURL, provider.DefaultBaseURL),
			APIKeyEnv: deref(p.APIKeyEnv, defaultAPIKeyEnv), Headers: p.Headers}
		var err error
		if spec.key, err = resolveKey(getenv, spec.APIKeyEnv, c.Credentials); err != nil {
			return err
		}
		c.providers[name] = spec
	}
	return nil
}

// isDefault reports whether name is the default provider, whose settings
// flags and the environment override. An unknown name gets the default.
func (c *Settings) isDefault(name string) bool {
	_, ok := c.providers[name]
	return !ok || name == c.Provider.V
}

// ClientConfig is the client configuration of the provider named name,
// with the key found when the configuration was loaded; the default
// provider (and an unknown name) gets the resolved top-level settings.
func (c *Settings) ClientConfig(name string) provider.OpenAIConfig {
	oc := provider.OpenAIConfig{BaseURL: c.BaseURL.V, APIKey: c.APIKey.V, Headers: c.Headers.V}
	if !c.isDefault(name) {
		p := c.providers[name]
		oc = provider.OpenAIConfig{BaseURL: p.BaseURL, APIKey: p.key.V, Headers: p.Headers}
	}
	c.limits.applyModel(&oc)
	return oc
}

// ModelClient is the default provider's model client. Its key is looked
// up at each request (see liveKeyClient).
func (c *Settings) ModelClient() provider.Client { return c.client(c.Provider.V) }

// client is the model client of the provider named name, with the key
// its keySource finds at each request.
func (c *Settings) client(name string) provider.Client {
	return &liveKeyClient{keys: c.keySource(name), build: func(key string) provider.Client {
		oc := c.ClientConfig(name)
		oc.APIKey = key
		if p, ok := c.providers[name]; ok && p.API == apiResponses {
			return provider.NewResponses(oc)
		}
		return provider.NewOpenAI(oc)
	}}
}

// agentProviders gives the agent one client per provider that a model of
// the list names, besides the default one (key ""), so that a session can
// switch between models served by different endpoints.
func (c *Settings) agentProviders() map[string]request.Provider {
	out := map[string]request.Provider{"": {Endpoint: c.BaseURL.V, SilentTruncation: isOllama(c.Provider.V, c.BaseURL.V), Discover: c.discoverer(c.Provider.V),
		DiscoverImages: c.imageDiscoverer(c.Provider.V)}}
	for _, m := range c.Models {
		if m.Provider == "" || m.Provider == c.Provider.V {
			continue
		}
		if _, done := out[m.Provider]; done {
			continue
		}
		base := c.ClientConfig(m.Provider).BaseURL
		out[m.Provider] = request.Provider{Client: c.client(m.Provider), Endpoint: base,
			SilentTruncation: isOllama(m.Provider, base), Discover: c.discoverer(m.Provider),
			DiscoverImages: c.imageDiscoverer(m.Provider)}
	}
	return out
}

// The APIs a provider can be spoken to with.
const (
	apiChat      = "chat"      // POST /chat/completions
	apiResponses = "responses" // POST /responses (OpenAI's Responses API)
)

// modelProvider is the provider name the agent knows a model by: "" for
// the default provider.
func (c *Settings) modelProvider(m ModelSpec) string {
	if m.Provider == c.Provider.V {
		return ""
	}
	return m.Provider
}

// isOllama tells an Ollama endpoint, which truncates a prompt past its
// num_ctx silently: a provider named after it, or Ollama's port 11434.
func isOllama(provider, baseURL string) bool {
	if strings.Contains(strings.ToLower(provider), "ollama") {
		return true
	}
	u, err := url.Parse(baseURL)
	return err == nil && u.Port() == "11434"
}

// discoverer asks the endpoint of provider name for a model's context
// window, with the key found at that moment.
func (c *Settings) discoverer(name string) func(context.Context, string) (provider.DiscoveredWindow, error) {
	keys := c.keySource(name)
	return func(ctx context.Context, model string) (provider.DiscoveredWindow, error) {
		oc := c.ClientConfig(name)
		oc.APIKey = keys.key()
		return provider.DiscoverWindow(ctx, oc, model)
	}
}

// imageDiscoverer asks the endpoint of provider name whether a model reads
// images (provider.DiscoverImages), with the key found at that moment.
func (c *Settings) imageDiscoverer(name string) func(context.Context, string) (provider.DiscoveredImages, error) {
	keys := c.keySource(name)
	return func(ctx context.Context, model string) (provider.DiscoveredImages, error) {
		oc := c.ClientConfig(name)
		oc.APIKey = keys.key()
		return provider.DiscoverImages(ctx, oc, model)
	}
}

// ImageDiscoverer is imageDiscoverer for the provider model is configured
// with (the default provider for a model not listed).
func (c *Settings) ImageDiscoverer(model string) func(context.Context, string) (provider.DiscoveredImages, error) {
	name := c.Provider.V
	for _, m := range c.Models {
		if m.Name == model && m.Provider != "" {
			name = m.Provider
		}
	}
	return c.imageDiscoverer(name)
}

// ImagesConfigured is the models table's images flag of model: nil when it
// is unset or the model is not listed (the endpoint or the family then
// decides).
func (c *Settings) ImagesConfigured(model string) *bool {
	for _, m := range c.Models {
		if m.Name == model && m.ImagesSet {
			v := m.Images
			return &v
		}
	}
	return nil
}

// ResolveImages decides whether model reads images: its configured flag,
// else discovered (nil: not asked or the endpoint did not say), else its
// family (provider.ResolveImages).
func (c *Settings) ResolveImages(model string, discovered *provider.DiscoveredImages) provider.ImageSupport {
	return provider.ResolveImages(model, c.ImagesConfigured(model), discovered)
}

// imagesFlag is m's images flag for the agent: nil when unset.
func (m ModelSpec) imagesFlag() *bool {
	if !m.ImagesSet {
		return nil
	}
	v := m.Images
	return &v
}

// ImagesShown is what `config show` says of m's images flag: "yes" or "no"
// when configured; unset, "auto" and what the model's family says (the
// endpoint, asked by a running agent, may say otherwise).
func (m ModelSpec) ImagesShown() string {
	switch {
	case m.ImagesSet && m.Images:
		return "yes"
	case m.ImagesSet:
		return "no"
	}
	if yes, known := provider.ReadsImages(m.Name); known && yes {
		return "auto: yes"
	} else if known {
		return "auto: no"
	}
	return "auto"
}

// auth is how the agent tells the user to sign in (see agent.Auth).
func (c *Settings) auth() *agent.Auth {
	exe, err := os.Executable()
	if err != nil {
		exe = "crow-acp"
	}
	keys := c.keySource(c.Provider.V)
	auth := &agent.Auth{KeyVariable: c.APIKeyEnv.V, Command: exe, LoginArgs: []string{"login"},
		HasKey: func() bool { return keys.key() != "" },
		KeyFrom: func() string {
			switch {
			case keys.envKey != "":
				return agent.KeyFromEnv
			case keys.key() != "":
				return agent.KeyFromLogin
			}
			return ""
		}}
	if c.Credentials != "" {
		auth.Logout = func() error { return RemoveCredential(c.Credentials, keys.name) }
	}
	return auth
}

// keySource is where the key of provider name is found at each request.
func (c *Settings) keySource(name string) keySource {
	key := c.APIKey
	if !c.isDefault(name) {
		key = c.providers[name].key
	}
	k := keySource{name: c.keyEnv(name), path: c.Credentials}
	if key.From.Kind == "env" {
		k.envKey = key.V
	}
	return k
}

// keyEnv is the variable that holds provider name's key.
func (c *Settings) keyEnv(name string) string {
	if c.isDefault(name) {
		return c.APIKeyEnv.V
	}
	return c.providers[name].APIKeyEnv
}
