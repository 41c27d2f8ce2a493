package agent

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Auth method ids.
const (
	// AuthMethodLogin is the terminal method: the client runs
	// `crow-acp login` for the user.
	AuthMethodLogin = "crow-login"
	// AuthMethodAPIKey is the agent method: authenticate checks that a key
	// is available now (from the environment or a `crow-acp login` the
	// user ran), without a restart.
	AuthMethodAPIKey = "crow-api-key"
)

// authMethods are the methods offered to a client with caps. The terminal
// method only to a client that can run it (the schema requires that); it
// also carries the `_meta["terminal-auth"]` launch hint older clients read.
func (si *signIn) authMethods(caps acp.ClientCapabilities) []acp.AuthMethod {
	auth := si.cfg.Auth
	if auth == nil {
		return []acp.AuthMethod{}
	}
	var methods []acp.AuthMethod
	if caps.TerminalAuth() && len(auth.LoginArgs) > 0 {
		hint, _ := json.Marshal(map[string]any{"terminal-auth": map[string]any{
			"command": auth.Command, "args": auth.LoginArgs, "label": "crow-acp login",
		}})
		methods = append(methods, acp.AuthMethod{
			Type: acp.AuthMethodTerminal, ID: AuthMethodLogin, Name: "Sign in with an API key",
			Description: "Runs `crow-acp login` in a terminal: paste the key for the model endpoint; it is stored for every editor.",
			Args:        auth.LoginArgs, Meta: hint,
		})
	}
	methods = append(methods, acp.AuthMethod{
		ID: AuthMethodAPIKey, Name: "Use the stored API key",
		Description: "Uses " + auth.KeyVariable + " or the key saved by `crow-acp login` (run it in a terminal first).",
	})
	return methods
}

// authError is the auth_required error for a model request the endpoint
// refused with 401; nil for any other failure.
func (si *signIn) authError(err error) error {
	var api *provider.APIError
	if si.cfg.Auth == nil || !errors.As(err, &api) || api.StatusCode != http.StatusUnauthorized {
		return nil
	}
	si.seen.rejected()
	if si.cfg.Auth.HasKey() {
		return si.authRequired("The model endpoint rejected the API key (HTTP 401)")
	}
	return si.authRequired("The model endpoint needs an API key (HTTP 401) and none is set")
}

// authRequired is -32000 with what the user must do, in one sentence.
func (si *signIn) authRequired(what string) error {
	return acp.AuthRequired("%s: sign in (run `crow-acp login` in a terminal, or set %s) and try again.", what, si.cfg.Auth.KeyVariable)
}

// signIn is how the user signs in to the model endpoint (auth.go,
// logout.go): the methods advertised and what the endpoint last said.
type signIn struct {
	*core
	seen authSeen
}

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

func (s *authSeen) reset() { s.v.Store(seenNothing) }
