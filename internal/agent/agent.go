// Package agent is crow-acp's coding agent, the acp.Agent of one
// connection: initialize, the sessions (new, load, resume, fork, list,
// close, delete: sessions.go; their stored metadata: meta.go; titles,
// archive, config options, modes, extension methods), the prompt turn
// (turn.go, tools.go, permission.go, subagent.go; undo.go records what the
// turn's tools change and serves /undo, /rewind, /redo), the request it sends
// (prepare.go, compact.go, usage.go, sysprompt.go) and load replay.
// What a request is built from and measured against (the models and their
// windows, the context rebuilt from the store) is package request.
//
// It is the only package that sees the wire (acp), the model client
// (internal/provider) and the store (internal/persistence) together; it may
// import them, internal/compaction, internal/checkpoint and its own
// packages (request, tool, prompt); only the commands (cmd/) import it.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Config is what the agent needs to know beyond its dependencies.
type Config struct {
	// Models are the models a session can use (the "model" config option).
	// Empty: just Model, with default attributes.
	Models []request.Model
	// Providers are the endpoints models name with Model.Provider; a model
	// naming none (or one missing here) uses the client given to New.
	Providers map[string]request.Provider
	// Model names the default model for new sessions; "" = the first of
	// Models. A name missing from Models is added with default attributes.
	Model   string
	Version string // reported as agentInfo.version
	// SystemPrompt replaces the built-in workflow prompt ("" = the built-in
	// one of the model's tier, agent/prompt); SystemPromptAppend is added
	// after it. A model's own settings and a client's systemPrompt apply
	// on top (sysprompt.go).
	SystemPrompt       string
	SystemPromptAppend string
	// MaxModelCalls caps model requests within one prompt turn; the turn
	// then ends with stopReason "max_turn_requests". 0 = scaled to the
	// model's window (request.ScaledLimits; request.DefaultMaxModelCalls up to 60k tokens).
	MaxModelCalls int
	// ListPageSize is the number of sessions per session/list page; 0 =
	// persistence.DefaultListLimit.
	ListPageSize int
	// EmptySessionTTL is how long a session that never had a message is
	// kept (session/list deletes older ones no live process holds); 0 =
	// DefaultEmptySessionTTL, negative = kept forever.
	EmptySessionTTL time.Duration
	// ModelTitles: after the first turn the session's model names the
	// session (one short extra request); otherwise the title is the start
	// of the first prompt.
	ModelTitles bool
	// PromptUsage: the prompt response carries the turn's token usage
	// (ACP unstable `usage`; request.TurnUsage).
	PromptUsage bool
	// Compaction holds the compaction thresholds; nil = compaction.Defaults().
	// The window and output reserve come from each session's Model.
	Compaction *compaction.Settings
	// ConnectionID names this agent's connection: the owner of its session
	// leases and the stream of its frame log. "" = a random id.
	ConnectionID string
	// LeaseTTL is how long a session stays locked to this process after its
	// last heartbeat. 0 = DefaultLeaseTTL.
	LeaseTTL time.Duration
	// PartialSaveInterval is how often a streaming reply is saved while it
	// grows (sooner, at most every 100 ms, when 4 KB were added since the
	// last save); a crash loses at most this much of it, and of a fast
	// stream about 4 KB. 0 = DefaultPartialSaveInterval.
	PartialSaveInterval time.Duration
	// Windows caches the context windows endpoints told, per endpoint and
	// model, across processes (nil: none; every process asks again).
	Windows persistence.WindowCache
	// FrameLog receives lifecycle events the frames cannot show (compaction);
	// nil = none.
	FrameLog FrameLog
	// Retry is the policy for failed model requests (zero value:
	// DefaultRetryPolicy).
	Retry RetryPolicy
	// MaxPromptBytes caps one prompt's text and embedded resources (its
	// images have their own limits, Images); a larger one is refused with
	// -32602. 0 = DefaultMaxPromptBytes.
	MaxPromptBytes int
	// Images bounds a prompt's images and an image read_file gives the
	// model (imagecheck's defaults for zero values).
	Images imagecheck.Limits
	// MaxConcurrentTurns caps the sessions running a prompt at once; one
	// more is refused with -32600. 0 = DefaultMaxConcurrentTurns.
	MaxConcurrentTurns int
	// Auth is how the user signs in to the model endpoint; nil: no auth
	// methods are advertised and a refused key is an ordinary model error.
	Auth *Auth
	// NoTools offers the model no tools at all (built-in or MCP), for
	// endpoints and small models that cannot call tools.
	NoTools bool
	// DefaultMode is the session mode new sessions start in ("" =
	// ModeDefault; see mode.go).
	DefaultMode string
	// CommandTimeout is run_command's default timeout (the model may ask for
	// another, up to 30 minutes). 0 = tool.DefaultCommandTimeout.
	CommandTimeout time.Duration
	// CommandOutputCap is how much output of one command is kept, in bytes.
	// 0 = tool.DefaultCommandOutputCap.
	CommandOutputCap int
	// ToolOutputLimit is how much of one tool result the model sees, in
	// bytes; the rest is kept and readable with read_output.
	// 0 = scaled to the model's window (request.ScaledLimits;
	// request.DefaultToolOutputLimit up to 60k tokens).
	ToolOutputLimit int
	// ChildEnv is the environment of run_command and MCP stdio servers
	// (tool.EnvPolicy); nil = tool.EnvPolicy{} applied to os.Environ().
	ChildEnv []string
	// ProtectedFiles are crow-acp's own files (configuration, credentials,
	// database, log): reading or writing one always asks, in every mode
	// but bypass.
	ProtectedFiles []string
	// Secrets returns the secret values crow-acp knows now (API keys,
	// header values, passwords), which are removed from the model's text
	// before it is streamed or stored; nil = none.
	Secrets func() []string
	// TrustedMCPServers are the MCP servers (by name) whose tool
	// annotations are believed: their readOnlyHint tools run like reads.
	TrustedMCPServers []string
	// MCPConnectTimeout bounds connecting to one MCP server.
	// 0 = tool.DefaultMCPConnectTimeout.
	MCPConnectTimeout time.Duration
	// MCPCallTimeout bounds one MCP tool call. 0 = tool.DefaultMCPCallTimeout.
	MCPCallTimeout time.Duration
	// ClientCallTimeout bounds each call to the client a tool waits on
	// (terminal/create, fs/*; see tool.BoundClient).
	// 0 = tool.DefaultClientCallTimeout.
	ClientCallTimeout time.Duration
	// CancelGrace is how long a cancelled turn may take to stop before its
	// prompt is answered "cancelled" anyway. 0 = DefaultCancelGrace.
	CancelGrace time.Duration
	// Subagents bounds the task tool's child sessions (subagent.go).
	Subagents SubagentLimits
	// Now is the agent's clock for what it writes down: the date in the
	// system prompt, a fork's time. nil = the wall clock (wallClock). Tests
	// set it, so that no outcome depends on the day they run (the date's
	// length moves the prompt's token count).
	Now func() time.Time
	// Checkpoints keeps what each turn changed, for /undo (undo.go); nil:
	// nothing is recorded and the undo commands are not offered.
	Checkpoints CheckpointStore
	// CheckpointTrees is the directory of the work-tree snapshots
	// (checkpoint.DefaultTreesDir); "": commands' effects are not covered.
	CheckpointTrees string
}

// wallClock is the clock of an agent whose Config.Now is nil. The package's
// tests pin it to a fixed day (TestMain).
var wallClock = time.Now

// FrameLog records lifecycle events; framelog.Log implements it.
type FrameLog interface {
	// Record appends a lifecycle event to the session and commits it before
	// returning.
	Record(ctx context.Context, sessionID string, kind persistence.EventKind, data any)
	// Recording reports whether the connection's frames are kept (a
	// journal that could not record the connection keeps none).
	Recording() bool
}

// journaling reports whether the frames sent are kept in the event log.
func (a *core) framesLogged() bool {
	return a.cfg.FrameLog != nil && a.cfg.FrameLog.Recording()
}

// DefaultPartialSaveInterval is how often a growing reply is saved: each
// save writes a row pair (the message, its message_updated event) and the
// frames sent since the last one, so ten a second cost a slow stream more
// than its text; once a second still keeps what a crash loses small.
const DefaultPartialSaveInterval = time.Second

// Agent implements acp.Agent for one connection. It is the face the
// connection sees: each ACP method hands its work to the room that does it
// (core.go lists them), so that a change to, say, how a turn runs stays in
// the turn engine's files.
type Agent struct {
	*core
	lifecycle *lifecycle // open, reopen, fork, close, delete (lifecycle.go)
	turns     *turns     // the prompt turn and its tools (turn.go, tools.go)
	build     *builder   // the model request (prepare.go)
	undo      *undoer    // /undo, /redo (undo.go)
}

var (
	_ acp.Agent              = (*Agent)(nil)
	_ acp.SessionLoader      = (*Agent)(nil)
	_ acp.SessionLister      = (*Agent)(nil)
	_ acp.SessionResumer     = (*Agent)(nil)
	_ acp.SessionCloser      = (*Agent)(nil)
	_ acp.SessionDeleter     = (*Agent)(nil)
	_ acp.ConfigOptionSetter = (*Agent)(nil)
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
		cfg.ConnectionID = newID("conn_")
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
		compact:  settings,
		counters: make(map[string]compaction.Counter),
		sessions: sessionTable{m: make(map[string]*session)},
		models:   request.NewModels(cfg.Models, cfg.Model, cfg.Providers, model, cfg.Windows, log),
		closed:   make(chan struct{}),
		children: make(chan struct{}, max(cfg.Subagents.withDefaults().MaxConcurrent, 0)),
	}
	c.leases = newLeases(c.store, cfg.ConnectionID, cfg.LeaseTTL, log)
	c.auth = &signIn{core: c}
	undo := &undoer{core: c}
	build := &builder{core: c}
	a := &Agent{core: c, build: build, undo: undo}
	a.turns = &turns{core: c, build: build, undo: undo}
	build.toolDefinitions = a.turns.toolDefinitions
	a.lifecycle = &lifecycle{core: c, build: build, undo: undo}
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

// record sends a lifecycle event to the frame log, if there is one.
func (a *core) record(ctx context.Context, sessionID string, kind persistence.EventKind, data any) {
	if a.cfg.FrameLog != nil {
		a.cfg.FrameLog.Record(ctx, sessionID, kind, data)
	}
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

// NewConnectionID returns a fresh connection id.
func NewConnectionID() string { return newID("conn_") }

// newID returns a random identifier with a prefix. Identity never comes from
// a clock.
func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return prefix + hex.EncodeToString(b[:])
}

// storeError maps a persistence error to the wire: one sentence naming the
// step that could not be saved or read and what to do.
func storeError(op string, err error) error {
	var acpErr *acp.Error
	switch {
	case errors.As(err, &acpErr):
		return err
	case errors.Is(err, persistence.ErrNotFound):
		return acp.ResourceNotFound("%s", sentence(fmt.Sprintf("Could not %s: %s", op, detail(err.Error()))))
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, persistence.ErrLeaseLost):
		return leaseLostError(op)
	case errors.Is(err, persistence.ErrStorageFull):
		e := acp.InternalError("Could not %s: the session database is full (%s); free space on its disk and try again, nothing was saved for this step.", op, detail(err.Error()))
		e.Data = map[string]any{"storage": "full"}
		return e
	case errors.Is(err, persistence.ErrStorageReadOnly):
		e := acp.InternalError("Could not %s: the session database is read-only (%s); check the permissions of the file and its directory, nothing was saved for this step.", op, detail(err.Error()))
		e.Data = map[string]any{"storage": "read-only"}
		return e
	default:
		return acp.InternalError("Could not %s: the session database failed (%s); try again, and see the log if it persists.", op, detail(err.Error()))
	}
}
