package agent

import (
	"context"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/provider"
	"go.uber.org/zap"
)

// New returns an agent that talks to client and keeps everything in store.
func New(client acp.Client, store Store, model provider.Client, cfg Config, log *zap.Logger) *Agent {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.MaxPromptBytes <= 0 {
		cfg.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if cfg.MaxConcurrentTurns <= 0 {
		cfg.MaxConcurrentTurns = DefaultMaxConcurrentTurns
	}
	cfg.Models, cfg.Model = request.NormalizeModels(cfg.Models, cfg.Model)
	settings := compaction.Defaults()
	if cfg.Compaction != nil {
		settings = *cfg.Compaction
	}
	for _, m := range cfg.Models {
		if m.WindowAssumed && settings.Auto {
			log.Warn("the context window of this model is unknown: automatic compaction is off for it until its endpoint reports the window (asked in the background) or it is configured (CROW_CONTEXT_WINDOW, or context_window in [[models]])",
				zap.String("model", m.Name))
		}
	}
	if cfg.ConnectionID == "" {
		cfg.ConnectionID = request.NewID("conn_")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.PartialSaveInterval <= 0 {
		cfg.PartialSaveInterval = DefaultPartialSaveInterval
	}
	if cfg.Now == nil {
		cfg.Now = wallClock
	}
	c := &core{
		client:   client,
		store:    store,
		model:    model,
		cfg:      cfg,
		log:      log,
		sessions: sessionTable{m: make(map[string]*session)},
		models:   request.NewModels(cfg.Models, cfg.Model, cfg.Providers, model, cfg.Windows, log),
		closed:   make(chan struct{}),
		children: make(chan struct{}, max(cfg.Subagents.withDefaults().MaxConcurrent, 0)),
	}
	c.leases = newLeases(c.store, cfg.ConnectionID, cfg.LeaseTTL, log)
	auth := &signIn{core: c}
	undo := &undoer{core: c}
	a := &Agent{core: c, auth: auth, undo: undo}
	a.turns = &turns{core: c, auth: auth, undo: undo}
	a.turns.subagent = a.turns.runSubagent
	host := &builderHost{core: c, auth: auth, tools: a.turns.toolDefinitions}
	c.build = request.NewBuilder(host, store, c.models, settings, request.BuilderConfig{NoTools: cfg.NoTools, Now: cfg.Now,
		SystemPrompt: cfg.SystemPrompt, SystemPromptAppend: cfg.SystemPromptAppend, ChildEnv: cfg.ChildEnv, ModeText: modeForModel}, log)
	a.lifecycle = &lifecycle{core: c, undo: undo}
	a.turns.slash = a.slashCommand
	a.lifecycle.commands = a.availableCommands
	a.models.StartDiscovery()
	return a
}

// ConnectionID is the agent's connection id (its lease owner).
func (a *Agent) ConnectionID() string { return a.cfg.ConnectionID }

// Close releases the agent's session leases and stops the sessions' MCP
// servers. Call it after the connection stopped serving.
func (a *Agent) Close() {
	a.models.StopDiscovery()
	a.closeOnce.Do(func() { close(a.closed) })
	a.sessions.dropAll(a.log)
	a.leases.close()
}

// initImagesWait bounds how long initialize waits for the endpoint to say
// whether the default model reads images (only when its family does not).
const initImagesWait = time.Second

// Initialize negotiates the protocol version and reports what crow-acp
// really supports.
func (a *Agent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	a.models.SettleImages(ctx, initImagesWait)
	a.mu.Lock()
	a.clientCaps = req.ClientCapabilities
	a.mu.Unlock()
	return &acp.InitializeResponse{
		// We speak version 1 only: a client asking for a newer one gets the
		// newest we support and decides whether to go on.
		ProtocolVersion: acp.ProtocolVersion,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession: true,
			PromptCapabilities: acp.PromptCapabilities{
				EmbeddedContext: true,
				Image:           a.models.TakesImages(),
			},
			SessionCapabilities: &acp.SessionCapabilities{
				List:                  &acp.Marker{},
				Delete:                &acp.Marker{},
				Resume:                &acp.Marker{},
				Close:                 &acp.Marker{},
				AdditionalDirectories: &acp.Marker{},
				SystemPrompt: &acp.SessionSystemPromptCapabilities{
					Mode: &acp.SessionSystemPromptModeCapabilities{Override: &acp.Marker{}}},
				Fork:    a.lifecycle.forkCapability(),
				Title:   &acp.Marker{},
				Archive: &acp.Marker{},
				Status:  &acp.Marker{},
			},
			Auth:            a.auth.authCapabilities(),
			McpCapabilities: acp.McpCapabilities{HTTP: true, SSE: true},
			Meta:            a.extMeta(),
		},
		AuthMethods: a.auth.authMethods(req.ClientCapabilities),
		AgentInfo:   &acp.Implementation{Name: "crow-acp", Title: "crow", Version: a.cfg.Version},
	}, nil
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
