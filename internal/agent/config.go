package agent

import (
	"context"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
	"github.com/crow-acp/crow-acp/internal/persistence"
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
	// on top (request.Builder.SystemPrompt).
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
	// ModeDefault; see modes.go).
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

// DefaultPartialSaveInterval is how often a growing reply is saved: each
// save writes a row pair (the message, its message_updated event) and the
// frames sent since the last one, so ten a second cost a slow stream more
// than its text; once a second still keeps what a crash loses small.
const DefaultPartialSaveInterval = time.Second

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

// Default subagent limits (Config.Subagents).
const (
	// DefaultMaxSubagents: children running at once in this process, over
	// all sessions; one more call fails at once and says so.
	DefaultMaxSubagents = 4
	// DefaultSubagentSteps: model requests of one child's turn.
	DefaultSubagentSteps = 30
	// DefaultSubagentTokens: tokens one child may use, prompt and reply
	// summed over its requests as the endpoint reports them.
	DefaultSubagentTokens = 500_000
	// DefaultSubagentsPerTurn: children one turn may start; the next task
	// call fails and says so (a model once made 25 in one reply).
	DefaultSubagentsPerTurn = 8
	// maxTaskBytes bounds the task text the parent's model writes.
	maxTaskBytes = 32 << 10
	// maxTaskTitleRunes bounds the child's title (the task's description).
	maxTaskTitleRunes = 80
)

// SubagentLimits bounds subagents; zero fields take the defaults above.
type SubagentLimits struct {
	MaxConcurrent int // children running at once; negative: no task tool
	MaxSteps      int // model requests per child
	MaxTokens     int // tokens per child
	PerTurn       int // children one turn may start

	turnLeft int // model requests left to the turn's subagents (reserveChild)
}

func (l SubagentLimits) withDefaults() SubagentLimits {
	if l.MaxConcurrent == 0 {
		l.MaxConcurrent = DefaultMaxSubagents
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultSubagentSteps
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultSubagentTokens
	}
	if l.PerTurn <= 0 {
		l.PerTurn = DefaultSubagentsPerTurn
	}
	return l
}

// CheckpointStore is the store that keeps checkpoints (the backend's): its
// fenced view (WithFence) is a checkpoint.Store. The frame log's wrapper is
// not one, so the agent is given the backend store for them.
type CheckpointStore interface {
	WithFence(f persistence.Fence) persistence.Store
}

// Defaults of the limits in Config.
const (
	// DefaultMaxPromptBytes admits a prompt with a few large files embedded
	// (1 MiB of text is about 250k tokens, beyond most context windows).
	DefaultMaxPromptBytes = 1 << 20
	// DefaultMaxConcurrentTurns bounds the sessions running a prompt at
	// once on one connection.
	DefaultMaxConcurrentTurns = 8
	// DefaultCancelGrace keeps the answer to session/cancel well inside a
	// second even when the turn is stuck in a call that ignores it.
	DefaultCancelGrace = 300 * time.Millisecond
)
