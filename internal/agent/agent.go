// Package agent is crow-acp's coding agent, the acp.Agent of one
// connection. Its files stand in layers; a file uses only names of files
// below it:
//
//   - the ACP methods (connection.go: initialize, auth; sessions.go: new,
//     load, resume, fork, list, close, delete, title, archive, mode, config
//     options; prompt.go: prompt, cancel; commands.go: the slash commands;
//     ext.go: the _crow extension methods), each handing its work to a room;
//   - agent.go, the Agent: the rooms of one connection;
//   - the rooms (core.go says what each holds): lifecycle (lifecycle.go,
//     fork.go, replay.go, ...), turns (turn.go, tools.go, subagent.go,
//     task.go, permission.go, ...), undoer (undo.go), signIn (auth.go,
//     logout.go);
//   - core.go, what every room shares, and host.go, what the request
//     builder (package request) asks of the agent;
//   - session.go (what this process keeps per session), lease.go, meta.go
//     (the stored metadata), config.go (Config and its defaults), and
//     helpers below them (errtext.go, content.go, ...).
//
// Building each model request (the context from the store, its measure
// against the model's window, compaction, the system prompt, usage and
// cost) is package request.
//
// It is the only package that sees the wire (acp), the model client
// (internal/provider) and the store (internal/persistence) together; it may
// import them, internal/compaction, internal/checkpoint and its own
// packages (request, tool, prompt); only the commands (cmd/) import it.
package agent

import (
	"github.com/crow-acp/crow-acp/acp"
)

// Agent implements acp.Agent for one connection. It is the face the
// connection sees: each ACP method hands its work to the room that does it
// (core.go lists them), so that a change to, say, how a turn runs stays in
// the turn engine's files.
type Agent struct {
	*core
	lifecycle *lifecycle // open, reopen, fork, close, delete (lifecycle.go)
	turns     *turns     // the prompt turn and its tools (turn.go, tools.go)
	undo      *undoer    // /undo, /redo (undo.go)
	auth      *signIn    // authenticate, logout (auth.go)
}

var (
	_ acp.Agent              = (*Agent)(nil)
	_ acp.SessionLoader      = (*Agent)(nil)
	_ acp.SessionLister      = (*Agent)(nil)
	_ acp.SessionResumer     = (*Agent)(nil)
	_ acp.SessionCloser      = (*Agent)(nil)
	_ acp.SessionDeleter     = (*Agent)(nil)
	_ acp.ConfigOptionSetter = (*Agent)(nil)
	_ acp.LogoutHandler      = (*Agent)(nil)
)
