package agent

import (
	"context"
	"fmt"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming"
)

// toolDefinitions are the tools offered to the model in session s.
func (a *Agent) toolDefinitions(s *persistence.Session) []streaming.Tool {
	return nil
}

// runToolCalls runs the model's tool calls and stores a result for every
// call, so the rebuilt context never holds a call without its result. No
// tools are offered yet, so each call is answered with an error the model
// can read.
func (a *Agent) runToolCalls(ctx, persistCtx context.Context, s *persistence.Session, calls []streaming.ToolCall) error {
	results := make([]*persistence.Message, 0, len(calls))
	for _, c := range calls {
		results = append(results, &persistence.Message{
			Role:       persistence.RoleTool,
			ToolCallID: c.ID,
			Content:    fmt.Sprintf("Error: there is no tool named %q.", c.Name),
			Status:     persistence.StatusFailed,
		})
	}
	if err := a.store.AppendMessages(persistCtx, s.ID, results...); err != nil {
		return storeError("save tool results", err)
	}
	return nil
}
