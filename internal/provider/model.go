// Package provider is crow-acp's seam to the language model: a small
// interface that streams one chat completion as events, an implementation on
// openai-go for any OpenAI-compatible endpoint, and the delta parser that
// turns raw chunks into those events.
//
// It knows nothing about storage or the wire protocol.
package provider

import (
	"context"
	"fmt"
)

// Role of a message sent to the model.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ContentPart is a non-text piece of a user message (images for now).
type ContentPart struct {
	Type     string // "text" or "image"
	Text     string
	MimeType string // for images
	Data     string // base64 image data
}

// ToolCall is a complete function call requested by the model.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON object text, as streamed
	// ArgumentsError is set by the parser when Arguments is not a JSON object
	// once the stream has ended; the call is kept so it can be answered with
	// an error result instead of failing the turn.
	ArgumentsError string
	// ThoughtSignature is the signature Gemini 3 attaches to a call
	// (extra_content.google.thought_signature); it must come back with the
	// call. The OpenAI client also remembers it by id (thoughtSignatures).
	ThoughtSignature string
}

// Message is one entry of the model's context.
type Message struct {
	Role       Role
	Content    string
	Parts      []ContentPart // when non-empty, sent as content parts after Content
	Reasoning  string        // sent back only to endpoints that want it; usually empty
	ToolCalls  []ToolCall    // assistant messages
	ToolCallID string        // tool messages
	// ReasoningItems go back with an assistant message's tool calls to
	// OpenAI's Responses API (ignored by chat completions).
	ReasoningItems []ReasoningItem
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON schema of the arguments object
}

// Request is one chat-completion request.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []Tool
	MaxTokens int // 0: endpoint default
	// ReasoningHistory and ToolCallIDs say how the history is written back
	// for this model; the zero values decide by the model's name.
	ReasoningHistory ReasoningHistory
	ToolCallIDs      ToolCallIDStyle
	// InlineThink says whether the reply starts inside a <think> block the
	// prompt opened; the zero value decides by the model's name.
	InlineThink InlineThink
	// BodyCache, when set, keeps the encoded messages for the next request
	// of the same conversation (chat completions only; see BodyCache).
	BodyCache *BodyCache
}

// EventKind tells which field of an Event is set.
type EventKind int

const (
	EventText          EventKind = iota + 1 // Text holds a content delta
	EventReasoning                          // Text holds a reasoning delta
	EventToolCallDelta                      // ToolCall holds the call so far (ID, Name, Arguments accumulated)
	EventUsage                              // Usage is set
	EventFinish                             // FinishReason is set
)

// Event is one step of a streamed completion.
type Event struct {
	Kind         EventKind
	Text         string
	ToolIndex    int
	ToolCall     ToolCall
	Usage        Usage
	FinishReason FinishReason
}

// Usage as reported by the provider for one request.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	// CachedTokens is the part of PromptTokens the provider served from
	// its prompt cache (billed cheaper); ReasoningTokens the part of
	// CompletionTokens spent reasoning. 0 when not reported.
	CachedTokens    int
	ReasoningTokens int
}

// FinishReason is the model's reason for ending a completion.
type FinishReason string

const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// Result is the accumulated outcome of one streamed completion. When Stream
// returns an error, Result still holds whatever arrived before it.
type Result struct {
	Text         string
	Reasoning    string
	ToolCalls    []ToolCall // complete, in index order; ids filled in when missing
	FinishReason FinishReason
	Usage        *Usage // nil when the provider did not report usage
	// ReasoningItems: the Responses API's reasoning items of this reply, to
	// be sent back with its tool calls (Message.ReasoningItems).
	ReasoningItems []ReasoningItem
}

// Client streams chat completions.
type Client interface {
	// Stream sends req and calls onEvent for each event as it arrives, in
	// order. If onEvent returns an error the stream is abandoned and that
	// error returned. Cancelling ctx stops the stream promptly; the returned
	// error then wraps ctx.Err(). The Result is never nil.
	Stream(ctx context.Context, req Request, onEvent func(Event) error) (*Result, error)
}

// APIError is an error answered by the model endpoint (an HTTP status).
type APIError struct {
	StatusCode int
	Message    string
	RetryAfter string // the Retry-After header, when sent
	// Overflow is set when the endpoint refused the request because its
	// prompt does not fit the model's context window (see ParseOverflow).
	Overflow *Overflow
}

func (e *APIError) Error() string {
	return fmt.Sprintf("model endpoint answered %d: %s", e.StatusCode, e.Message)
}

// Retryable reports whether the same request may succeed later.
// An overflow never is, whatever its status (llama.cpp answered 500).
func (e *APIError) Retryable() bool {
	return e.Overflow == nil && (e.StatusCode == 429 || e.StatusCode >= 500)
}
