package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Auth is how a user signs in to the model endpoint. The agent advertises
// it in initialize, answers a request the endpoint refuses for want of a
// valid key (HTTP 401) with auth_required (-32000) so the client shows its
// sign-in UI, and accepts authenticate only for the methods it advertised.
type Auth struct {
	// KeyVariable names the variable the key is read from, e.g.
	// OPENAI_API_KEY; it is named in messages, the key never is.
	KeyVariable string
	// Command is this executable (an absolute path) and LoginArgs the
	// arguments that run the interactive sign-in ("login"): the command a
	// client runs in a terminal for terminal auth.
	Command   string
	LoginArgs []string
	// HasKey reads the credentials again and reports whether a key is
	// available now (a `crow-acp login` in another process counts).
	HasKey func() bool
	// KeyFrom says where the key comes from now: KeyFromEnv, KeyFromLogin
	// or "" (none); nil: unknown (logout.go).
	KeyFrom func() string
	// Logout removes the key `crow-acp login` saved for the endpoint;
	// nil: logout is not offered (logout.go).
	Logout func() error
}

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
func (a *signIn) authMethods(caps acp.ClientCapabilities) []acp.AuthMethod {
	auth := a.cfg.Auth
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

// Authenticate accepts the methods advertised to this client (-32602 for
// any other id) and succeeds once a key is available.
func (a *Agent) Authenticate(_ context.Context, req *acp.AuthenticateRequest) (*acp.AuthenticateResponse, error) {
	a.mu.Lock()
	caps := a.clientCaps
	a.mu.Unlock()
	var ids []string
	for _, m := range a.auth.authMethods(caps) {
		if m.ID == req.MethodID {
			if !a.cfg.Auth.HasKey() {
				return nil, a.auth.authRequired("No API key is set yet")
			}
			a.auth.seen.reset() // a new key may be there: not known to be rejected
			return &acp.AuthenticateResponse{}, nil
		}
		ids = append(ids, m.ID)
	}
	if len(ids) == 0 {
		return nil, acp.InvalidParams("Unknown auth method %q: crow-acp offers none.", req.MethodID)
	}
	return nil, acp.InvalidParams("Unknown auth method %q: crow-acp offers %s.", req.MethodID, strings.Join(ids, ", "))
}

// authError is the auth_required error for a model request the endpoint
// refused with 401; nil for any other failure.
func (a *signIn) authError(err error) error {
	var api *provider.APIError
	if a.cfg.Auth == nil || !errors.As(err, &api) || api.StatusCode != http.StatusUnauthorized {
		return nil
	}
	a.auth.seen.rejected()
	if a.cfg.Auth.HasKey() {
		return a.authRequired("The model endpoint rejected the API key (HTTP 401)")
	}
	return a.authRequired("The model endpoint needs an API key (HTTP 401) and none is set")
}

// authRequired is -32000 with what the user must do, in one sentence.
func (a *signIn) authRequired(what string) error {
	return acp.AuthRequired("%s: sign in (run `crow-acp login` in a terminal, or set %s) and try again.", what, a.cfg.Auth.KeyVariable)
}
