package agent

import (
	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
)

// logout (stable) and auth/status (unstable): signing out removes the key
// `crow-acp login` saved for the endpoint, and the status says what is
// known about the key, never the key itself.

// Where Auth.KeyFrom says the key comes from.
const (
	KeyFromEnv   = "environment"
	KeyFromLogin = "login"
)

// authCapabilities advertises logout where there is a stored key to
// remove, and auth/status wherever the agent knows how keys are found.
func (si *signIn) authCapabilities() *acp.AgentAuthCapabilities {
	auth := si.cfg.Auth
	if auth == nil {
		return nil
	}
	caps := &acp.AgentAuthCapabilities{Status: &acp.Marker{}}
	if auth.Logout != nil {
		caps.Logout = &acp.Marker{}
	}
	return caps
}

// defaultEndpoint reports whether m is served by the agent's own endpoint,
// the one Auth's key is for (clientFor's choice).
func (si *signIn) defaultEndpoint(m request.Model) bool {
	p, ok := si.cfg.Providers[m.Provider]
	return !ok || p.Client == nil
}
