package agent

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// The agent's rooms, from the bottom up; each imports only those below it:
//
//   - core (this file): what every room shares: the client, the store, the
//     models, the sessions this process keeps and the few acts all of them
//     need (send an update, write fenced by the lease, change the stored
//     metadata, call the model under the retry policy).
//   - signIn (auth.go, logout.go): how the user signs in to the endpoint.
//   - undoer (undo.go): what a turn's tools change, and /undo, /redo.
//   - builder (prepare.go, compact.go, usage.go, window.go, sysprompt.go):
//     the model request built from the store, measured, compacted.
//   - turns (turn.go, tools.go, subagent.go, permission.go, ...): one prompt
//     turn, its tool calls and subagents.
//   - lifecycle (lifecycle.go, fork.go, replay.go, ...): sessions opened,
//     reopened, forked, replayed, closed and deleted.
//   - Agent (agent.go, sessions.go, ext.go, commands.go): the ACP methods,
//     each handing its work to a room.
type core struct {
	client acp.Client
	store  Store
	model  provider.Client
	cfg    Config
	log    *zap.Logger
	leases *leases
	auth   *signIn
	// closed is closed by Close: what a session still retries in the
	// background stops (unfinished.go).
	closed    chan struct{}
	closeOnce sync.Once

	compact    compaction.Settings           // thresholds; Window/OutputReserve per model
	counters   map[string]compaction.Counter // by tokenizer name, under mu
	mu         sync.Mutex
	clientCaps acp.ClientCapabilities
	sessions   sessionTable // what this process keeps per session, by id (session.go)

	models   *request.Models // the models, their endpoints and context windows
	children chan struct{}   // one token per running subagent (subagent.go)
}

// signIn is how the user signs in to the model endpoint (auth.go,
// logout.go): the methods advertised and what the endpoint last said.
type signIn struct {
	*core
	seen authSeen
}

// undoer records what a turn's tools change and undoes it (undo.go).
type undoer struct{ *core }

// builder builds each model request from the store: the context, its
// budget against the model's window, compaction, the system prompt, usage.
type builder struct {
	*core
	// toolDefinitions lists the tools offered to the model (turns'); their
	// schemas count against the window.
	toolDefinitions func(*session, *persistence.Session) []provider.Tool
}

// turns runs prompt turns: the model's replies, its tool calls, subagents.
type turns struct {
	*core
	build *builder
	undo  *undoer
	// slash handles a prompt that is a slash command (the Agent's
	// commands.go); handled false: the prompt goes to the model.
	slash func(ctx context.Context, sess *session, s *persistence.Session, prompt []acp.ContentBlock) (stop acp.StopReason, handled bool, err error)
}

// lifecycle opens, reopens, forks, replays, closes and deletes sessions.
type lifecycle struct {
	*core
	build *builder
	undo  *undoer
	// commands lists the slash commands that work here (the Agent's
	// commands.go), announced when a session opens.
	commands func() []acp.AvailableCommand
}
