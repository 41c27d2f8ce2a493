package request

import (
	"strings"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// The system prompt is written in sysprompt.go (agent/prompt).

// ContextEntry is one message of a model request with its token count and
// the stored message it comes from (0: the system prompt or a synthetic
// result).
type ContextEntry struct {
	Msg       provider.Message
	Tokens    int
	MessageID int64
}

func MessagesOf(entries []ContextEntry) []provider.Message {
	out := make([]provider.Message, len(entries))
	for i, e := range entries {
		out[i] = e.Msg
	}
	return out
}

// ContextMessages builds a request's messages from the stored view: the head (system
// prompt), then the torso in compaction.Order (summaries as context, then
// the active messages with every tool result right after its call). A call
// whose result never reached the store is answered with a synthetic error
// result, because model APIs reject a call without one. Roles alternate
// (see alternate).
func ContextMessages(c compaction.Counter, system string, view []persistence.Message) []ContextEntry {
	return alternate(rawContextMessages(c, system, view))
}

func rawContextMessages(c compaction.Counter, system string, view []persistence.Message) []ContextEntry {
	ordered := compaction.Order(view)
	out := make([]ContextEntry, 0, len(ordered)+1)
	out = append(out, ContextEntry{Msg: provider.Message{Role: provider.RoleSystem, Content: system}})
	// toolImages are the images the current run of tool results gave
	// (read_file): a tool message carries text only in the chat APIs, so
	// they follow the run as a user message.
	var toolImages []provider.ContentPart
	for i, m := range ordered {
		e := ContextEntry{Tokens: m.TokenCount, MessageID: m.ID}
		switch m.Role {
		case persistence.RoleUser:
			e.Msg = provider.Message{Role: provider.RoleUser, Content: m.Content, Parts: imageParts(&m)}
		case persistence.RoleSummary:
			e.Msg = provider.Message{Role: provider.RoleUser, Content: compaction.SummaryPrefix + m.Content}
		case persistence.RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				continue // an empty partial reply carries nothing
			}
			// The reasoning goes along; the request body keeps it only for
			// models that want it back (provider.ReasoningHistory).
			e.Msg = provider.Message{Role: provider.RoleAssistant, Content: m.Content, Reasoning: m.Reasoning}
			for _, tc := range m.ToolCalls {
				e.Msg.ToolCalls = append(e.Msg.ToolCalls, provider.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			}
		case persistence.RoleTool:
			e.Msg = provider.Message{Role: provider.RoleTool, ToolCallID: m.ToolCallID, Content: m.Content}
			toolImages = append(toolImages, imageParts(&m)...)
		default:
			continue
		}
		out = append(out, e)
		// Synthetic results go after the stored results of the same
		// assistant message (Order put those right behind it).
		if m.Role == persistence.RoleTool || m.Role == persistence.RoleAssistant {
			if i+1 < len(ordered) && ordered[i+1].Role == persistence.RoleTool {
				continue
			}
			if owner, answered := ownerOf(ordered, i); owner != nil {
				for _, tc := range owner.ToolCalls {
					if !answered[tc.ID] {
						out = append(out, ContextEntry{
							Msg:    provider.Message{Role: provider.RoleTool, ToolCallID: tc.ID, Content: compaction.InterruptedResult},
							Tokens: compaction.SyntheticTokens(c, tc.ID),
						})
					}
				}
			}
			if len(toolImages) > 0 {
				// Counted with the tool messages that hold them.
				out = append(out, ContextEntry{Msg: provider.Message{Role: provider.RoleUser, Content: ToolImagesText, Parts: toolImages}})
				toolImages = nil
			}
		}
	}
	return out
}

// alternate merges consecutive user messages, and consecutive assistant
// messages, into one: strict chat templates (llama.cpp's Jinja for
// Mistral, Gemma and others) refuse two in a row with HTTP 500
// "Conversation roles must alternate user/assistant/...", and a session
// produces them after a summary (sent as a user message) followed by a
// prompt, after a turn cancelled or failed before its first token, and
// after a reply that was reasoning only (not sent back). The merged text
// keeps each message verbatim, joined by a blank line, so the summary
// stays first and a prompt is still the last thing the model reads.
//
// A merged entry counts the tokens of all it holds. A merged user entry
// keeps the first message's id (the context cache looks for a prompt's own
// entry and, not finding it, keeps that part open); a merged assistant
// keeps the last one's, which made the tool calls that follow.
func alternate(entries []ContextEntry) []ContextEntry {
	merge := func(i int) bool {
		r := entries[i].Msg.Role
		return i > 0 && r == entries[i-1].Msg.Role && (r == provider.RoleUser || r == provider.RoleAssistant) &&
			len(entries[i-1].Msg.ToolCalls) == 0
	}
	n := 0
	for i := range entries {
		if merge(i) {
			n++
		}
	}
	if n == 0 {
		return entries
	}
	out := make([]ContextEntry, 0, len(entries)-n)
	for i, e := range entries {
		if !merge(i) {
			out = append(out, e)
			continue
		}
		last := &out[len(out)-1]
		m := last.Msg
		m.Content = joinText(m.Content, e.Msg.Content)
		m.Reasoning = joinText(m.Reasoning, e.Msg.Reasoning)
		m.Parts = append(m.Parts[:len(m.Parts):len(m.Parts)], e.Msg.Parts...)
		m.ToolCalls, m.ReasoningItems = e.Msg.ToolCalls, e.Msg.ReasoningItems
		last.Msg, last.Tokens = m, last.Tokens+e.Tokens
		if m.Role == provider.RoleAssistant {
			last.MessageID = e.MessageID
		}
	}
	return out
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// ownerOf returns the assistant message whose results end at ordered[i]
// (ordered[i] itself, or the assistant before a run of tool messages), and
// the calls those results answer.
func ownerOf(ordered []persistence.Message, i int) (*persistence.Message, map[string]bool) {
	answered := make(map[string]bool)
	for ; i >= 0; i-- {
		switch ordered[i].Role {
		case persistence.RoleAssistant:
			return &ordered[i], answered
		case persistence.RoleTool:
			answered[ordered[i].ToolCallID] = true
		default:
			return nil, nil
		}
	}
	return nil, nil
}

// ToolImagesText introduces the images tool results gave, in the user
// message that carries them.
const ToolImagesText = "[The image(s) the tool results above returned:]"

// imageParts are m's images as the model reads them: an image compaction
// took out of the context (compaction.ContextParts) is its note, as text.
func imageParts(m *persistence.Message) []provider.ContentPart {
	var out []provider.ContentPart
	ctx := compaction.ContextParts(m)
	for i, p := range m.Parts {
		if p.Type != "image" {
			continue
		}
		switch q := ctx[i]; {
		case q.Type == "text":
			out = append(out, provider.ContentPart{Type: "text", Text: q.Text})
		case strings.HasPrefix(q.MimeType, "image/"):
			out = append(out, provider.ContentPart{Type: "image", MimeType: q.MimeType, Data: q.Data})
		}
	}
	return out
}
