package agent

import (
	"context"
	"strings"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming"
)

// DefaultSystemPrompt is deliberately short: it is part of every request and
// counts against small context windows.
const DefaultSystemPrompt = `You are crow, a coding agent working in the user's project through their editor.
Be concise and precise. Prefer small, verifiable steps. When you are unsure, say so.`

// interruptedResult answers a tool call whose result never reached the store
// (the process died or the turn was cut). Model APIs reject a context with a
// call and no result.
const interruptedResult = "Error: this tool call was interrupted before it produced a result."

// buildContext rebuilds the model's messages from the store: the system
// prompt, then the session's active messages in seq order. Nothing about the
// context is kept in memory between requests.
func (a *Agent) buildContext(ctx context.Context, s *persistence.Session) ([]streaming.Message, error) {
	stored, err := a.store.Messages(ctx, s.ID, persistence.MessageFilter{ActiveOnly: true})
	if err != nil {
		return nil, err
	}
	return contextMessages(a.systemPrompt(s), stored), nil
}

func (a *Agent) systemPrompt(s *persistence.Session) string {
	return a.cfg.SystemPrompt + "\n\nThe project's root directory is " + s.Cwd + "."
}

// contextMessages is the pure part of buildContext.
func contextMessages(system string, stored []persistence.Message) []streaming.Message {
	out := make([]streaming.Message, 0, len(stored)+1)
	out = append(out, streaming.Message{Role: streaming.RoleSystem, Content: system})
	answered := make(map[string]bool)
	for _, m := range stored {
		if m.Role == persistence.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range stored {
		switch m.Role {
		case persistence.RoleUser:
			out = append(out, streaming.Message{Role: streaming.RoleUser, Content: m.Content, Parts: imageParts(m.Parts)})
		case persistence.RoleSummary:
			out = append(out, streaming.Message{Role: streaming.RoleUser,
				Content: "Summary of the earlier conversation (older messages were compacted):\n\n" + m.Content})
		case persistence.RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				continue // an empty partial reply carries nothing
			}
			msg := streaming.Message{Role: streaming.RoleAssistant, Content: m.Content}
			for _, c := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, streaming.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
			}
			out = append(out, msg)
			for _, c := range m.ToolCalls {
				if !answered[c.ID] {
					out = append(out, streaming.Message{Role: streaming.RoleTool, ToolCallID: c.ID, Content: interruptedResult})
				}
			}
		case persistence.RoleTool:
			out = append(out, streaming.Message{Role: streaming.RoleTool, ToolCallID: m.ToolCallID, Content: m.Content})
		}
	}
	return out
}

// The synthetic results must sit right after their call; a stored result for
// the same id later on would then be a duplicate. contextMessages only adds
// one when no stored result exists, so the order rule holds.

func imageParts(parts []persistence.Part) []streaming.ContentPart {
	var out []streaming.ContentPart
	for _, p := range parts {
		if p.Type == "image" && strings.HasPrefix(p.MimeType, "image/") {
			out = append(out, streaming.ContentPart{Type: "image", MimeType: p.MimeType, Data: p.Data})
		}
	}
	return out
}
