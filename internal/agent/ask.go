package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Questions to the user (tool.AskUserTool, and MCP servers' elicitations):
// asked with elicitation/create where the client advertised forms, else as
// a permission request, else as the turn's reply (askedInText).

// elicitInto gives tools the elicitation modes the client advertised
// (env.Elicit nil: no forms; the tools fall back).
func (tr *turns) elicitInto(env *tool.Env, caps acp.ClientCapabilities) {
	e, ok := tr.client.(acp.Elicitor)
	if !ok {
		return
	}
	if caps.ElicitsForm() {
		env.Elicit = e.CreateElicitation
	}
	if c, ok := tr.client.(interface {
		CompleteElicitation(context.Context, *acp.CompleteElicitationNotification) error
	}); ok && caps.ElicitsURL() {
		env.ElicitURL, env.CompleteElicitation = e.CreateElicitation, c.CompleteElicitation
	}
}

// askedInText ends the turn after a question nobody could be asked
// interactively: runToolCall returns it once the call's result is stored,
// runToolCalls answers the calls after it without running them, and
// runTurn sends the question as the agent's reply.
type askedInText struct{ text string }

func (e *askedInText) Error() string { return "the question is the turn's reply" }

// replyWithQuestion sends and stores the question as the agent's reply, so
// that a load replays it and the next prompt (the user's answer) follows
// an assistant message.
func (tr *turns) replyWithQuestion(persistCtx context.Context, sess *session, s *persistence.Session, q *askedInText) (acp.StopReason, error) {
	msg := &persistence.Message{Role: persistence.RoleAssistant, Content: q.text, Status: persistence.StatusComplete}
	countTokens(tr.build.CounterFor(tr.sessionModel(s)), msg)
	if err := tr.writes(sess).AppendMessages(persistCtx, s.ID, msg); err != nil {
		return "", storeError("save question", err)
	}
	tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{
		Content: acp.TextBlock(q.text), MessageID: messageID(msg)}})
	return acp.StopEndTurn, nil
}

// notRunAfterQuestion is the stored result of a call the model made in
// the same reply as a question asked in text.
const notRunAfterQuestion = "Error: not run: the turn ended to wait for the user's answer to your question."
