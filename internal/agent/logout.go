package agent

import (
	"context"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
)

// logout (stable) and auth/status (unstable): signing out removes the key
// `crow-acp login` saved for the endpoint, and the status says what is
// known about the key, never the key itself.

var _ acp.LogoutHandler = (*Agent)(nil)

// Where Auth.KeyFrom says the key comes from.
const (
	KeyFromEnv   = "environment"
	KeyFromLogin = "login"
)

// authSeen is what the endpoint last said: nothing yet, an answer (the
// key, or no key, was accepted), or a 401.
type authSeen struct{ v atomic.Int32 }

const (
	seenNothing int32 = iota
	seenAnswer
	seenRejected
)

func (s *authSeen) answered() { s.v.Store(seenAnswer) }
func (s *authSeen) rejected() { s.v.Store(seenRejected) }
func (s *authSeen) reset()    { s.v.Store(seenNothing) }

// authCapabilities advertises logout where there is a stored key to
// remove, and auth/status wherever the agent knows how keys are found.
func (a *signIn) authCapabilities() *acp.AgentAuthCapabilities {
	auth := a.cfg.Auth
	if auth == nil {
		return nil
	}
	caps := &acp.AgentAuthCapabilities{Status: &acp.Marker{}}
	if auth.Logout != nil {
		caps.Logout = &acp.Marker{}
	}
	return caps
}

// Logout removes the key crow-acp saved for the endpoint; the next model
// request goes without it. A key set in crow-acp's environment cannot be
// removed from here: logout then says so, and what to do, instead of
// claiming the user is signed out.
func (a *Agent) Logout(_ context.Context, _ *acp.LogoutRequest) (*acp.LogoutResponse, error) {
	auth := a.cfg.Auth
	if auth == nil || auth.Logout == nil {
		return nil, acp.MethodNotFound("logout")
	}
	if err := auth.Logout(); err != nil {
		a.log.Warn("logout failed", zap.Error(err))
		return nil, &acp.Error{Code: acp.CodeInternalError, Message: "Cannot remove the saved API key: " + err.Error()}
	}
	a.auth.seen.reset()
	a.log.Info("signed out: the saved API key was removed")
	if auth.KeyFrom != nil && auth.KeyFrom() == KeyFromEnv {
		return nil, acp.InvalidRequest("The key saved by `crow-acp login` was removed, but %s is set in crow-acp's environment and is still used: remove it from the agent's settings in the editor to sign out.", auth.KeyVariable)
	}
	return &acp.LogoutResponse{}, nil
}

// AuthStatus reports the key's state: unauthenticated when the endpoint
// rejected the last request for want of a valid key or no key is set (and
// no request has shown that none is needed), authenticated when a key is
// set, not_required when the endpoint answered without one.
func (a *Agent) AuthStatus(_ context.Context, _ *acp.AuthStatusRequest) (*acp.AuthStatusResponse, error) {
	auth := a.cfg.Auth
	if auth == nil {
		return nil, acp.MethodNotFound("auth/status")
	}
	from := ""
	if auth.HasKey() {
		from = KeyFromLogin
		if auth.KeyFrom != nil && auth.KeyFrom() == KeyFromEnv {
			from = KeyFromEnv
		}
	}
	res := &acp.AuthStatusResponse{}
	switch seen := a.auth.seen.v.Load(); {
	case seen == seenRejected:
		res.State = acp.AuthUnauthenticated
	case from != "":
		res.State = acp.AuthAuthenticated
	case seen == seenAnswer:
		res.State = acp.AuthNotRequired
	default:
		res.State = acp.AuthUnauthenticated
	}
	if from != "" {
		active := true
		label := auth.KeyVariable + " from the environment"
		if from == KeyFromLogin {
			label = auth.KeyVariable + " saved by crow-acp login"
		}
		res.Accounts = []acp.AuthAccount{{Label: label, Active: &active}}
	}
	return res, nil
}

// defaultEndpoint reports whether m is served by the agent's own endpoint,
// the one Auth's key is for (clientFor's choice).
func (a *signIn) defaultEndpoint(m request.Model) bool {
	p, ok := a.cfg.Providers[m.Provider]
	return !ok || p.Client == nil
}
