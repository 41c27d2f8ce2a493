package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// chatBody is the chat-completions request body as plain structs for
// encoding/json. openai-go's ChatCompletionNewParams marshal through
// reflective unions and a MarshalJSON per object, about 7× slower for a long
// session's 5,000 messages (BenchmarkRequestBody), and the body is rebuilt
// for every request, every step of a tool loop included. The JSON is the
// same as openai-go made from the same Request (TestRequestBodyMatchesOpenAIGo).
type chatBody struct {
	Model               string         `json:"model,omitempty"` // as openai-go: left out when empty
	Messages            []chatMessage  `json:"messages"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	Tools               []chatTool     `json:"tools,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role Role `json:"role"`
	// Content is a string, a []chatPart (user messages with parts), or nil:
	// left out (an assistant message with tool calls and no text).
	Content    any            `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	// Reasoning goes back in the reasoning field of DeepSeek, GLM, vLLM
	// and llama.cpp, as the model's ReasoningHistory says: nil leaves the
	// field out, a pointer to "" sends it empty.
	Reasoning *string `json:"reasoning_content,omitempty"`
}

type chatPart struct {
	Type     string        `json:"type"` // "text" or "image_url"
	Text     *string       `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
}

type chatImageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"` // "function"
	Function chatFunctionCall `json:"function"`
	// ExtraContent carries Gemini 3's thought signature back.
	ExtraContent *chatExtraContent `json:"extra_content,omitempty"`
}

type chatExtraContent struct {
	Google struct {
		ThoughtSignature string `json:"thought_signature"`
	} `json:"google"`
}

type chatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string          `json:"type"` // "function"
	Function chatFunctionDef `json:"function"`
}

type chatFunctionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// bodyShape is how one endpoint and model want the request written: what
// the model's name says (history) and what the endpoint has refused before
// (parameters).
type bodyShape struct {
	reasoning           ReasoningHistory // resolved, never ReasoningAuto
	toolCallIDs         ToolCallIDStyle  // resolved, never ToolCallIDsAuto
	maxCompletionTokens bool             // max_completion_tokens instead of max_tokens
	noStreamOptions     bool             // the endpoint refused stream_options
	noReasoningSummary  bool             // Responses API: the endpoint refused reasoning.summary
	// signatures: Gemini 3's thought signatures by tool-call id, sent
	// back with the calls (nil: none are sent; see thoughtSignaturesFor).
	signatures map[string]string
}

// shapeFor is the shape of req by its model's name alone.
func shapeFor(req Request) bodyShape {
	return bodyShape{
		reasoning:           reasoningHistoryFor(req.Model, req.ReasoningHistory),
		toolCallIDs:         toolCallIDsFor(req.Model, req.ToolCallIDs),
		maxCompletionTokens: usesMaxCompletionTokens(req.Model),
	}
}

// requestBody encodes req as a streaming chat-completions request body.
func requestBody(req Request, shape bodyShape) ([]byte, error) {
	body := chatBody{
		Model:    req.Model,
		Messages: make([]chatMessage, 0, len(req.Messages)),
		Stream:   true,
	}
	if !shape.noStreamOptions {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.MaxTokens > 0 {
		if shape.maxCompletionTokens {
			body.MaxCompletionTokens = req.MaxTokens
		} else {
			body.MaxTokens = req.MaxTokens
		}
	}
	for i, m := range req.Messages {
		msg, err := chatMessageOf(m, shape)
		if err != nil {
			return nil, fmt.Errorf("streaming: message %d: %w", i, err)
		}
		body.Messages = append(body.Messages, msg)
	}
	for _, t := range req.Tools {
		fn := chatFunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		if fn.Parameters == nil {
			fn.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		body.Tools = append(body.Tools, chatTool{Type: "function", Function: fn})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Code is full of <, > and &: escaping them would only make the body
	// bigger (openai-go does not escape them either).
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&body); err != nil {
		return nil, fmt.Errorf("streaming: encoding the request: %w", err)
	}
	return buf.Bytes(), nil
}

func chatMessageOf(m Message, shape bodyShape) (chatMessage, error) {
	switch m.Role {
	case RoleSystem:
		return chatMessage{Role: RoleSystem, Content: textWithParts(m)}, nil
	case RoleUser:
		if len(m.Parts) == 0 {
			return chatMessage{Role: RoleUser, Content: m.Content}, nil
		}
		parts := make([]chatPart, 0, len(m.Parts)+1)
		if m.Content != "" {
			parts = append(parts, chatPart{Type: "text", Text: &m.Content})
		}
		for i := range m.Parts {
			p := &m.Parts[i]
			switch p.Type {
			case "text":
				parts = append(parts, chatPart{Type: "text", Text: &p.Text})
			case "image":
				if p.MimeType == "" || p.Data == "" {
					return chatMessage{}, errors.New("image part without mime type or data")
				}
				parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: "data:" + p.MimeType + ";base64," + p.Data}})
			default:
				return chatMessage{}, fmt.Errorf("unsupported content part type %q", p.Type)
			}
		}
		return chatMessage{Role: RoleUser, Content: parts}, nil
	case RoleAssistant:
		a := chatMessage{Role: RoleAssistant}
		switch {
		case shape.reasoning == ReasoningRequire, shape.reasoning == ReasoningEcho && m.Reasoning != "":
			a.Reasoning = &m.Reasoning
		}
		if text := textWithParts(m); text != "" || len(m.ToolCalls) == 0 {
			a.Content = text
		}
		if len(m.ToolCalls) > 0 {
			a.ToolCalls = make([]chatToolCall, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				a.ToolCalls[i] = chatToolCall{ID: shape.toolCallID(tc.ID), Type: "function", Function: chatFunctionCall{
					Name:      tc.Name,
					Arguments: argumentsForHistory(tc.Arguments),
				}}
				if shape.signatures != nil {
					sig := tc.ThoughtSignature
					if sig == "" {
						sig = shape.signatures[tc.ID]
					}
					if sig != "" {
						a.ToolCalls[i].ExtraContent = &chatExtraContent{}
						a.ToolCalls[i].ExtraContent.Google.ThoughtSignature = sig
					}
				}
			}
		}
		return a, nil
	case RoleTool:
		if m.ToolCallID == "" {
			return chatMessage{}, errors.New("tool message without tool call id")
		}
		return chatMessage{Role: RoleTool, Content: textWithParts(m), ToolCallID: shape.toolCallID(m.ToolCallID)}, nil
	default:
		return chatMessage{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

func (s bodyShape) toolCallID(id string) string {
	if s.toolCallIDs == ToolCallIDsMistral {
		return MistralToolCallID(id)
	}
	return id
}
