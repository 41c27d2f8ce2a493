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
	build     *builder   // the model request (prepare.go)
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
