package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// turns runs prompt turns: the model's replies, its tool calls, subagents.
type turns struct {
	*core
	auth *signIn
	// subagent runs a task call's child session (subagent.go); the task
	// tool (task.go) calls it.
	subagent func(ctx context.Context, parent *persistence.Session, env *tool.Env, callID, title, prompt string) tool.Result
	undo     *undoer
	// slash handles a prompt that is a slash command (the Agent's
	// commands.go); handled false: the prompt goes to the model.
	slash func(ctx context.Context, sess *session, s *persistence.Session, prompt []acp.ContentBlock) (stop acp.StopReason, handled bool, err error)
}
