package streaming

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"
)

// Chunk is one streamed chat.completion.chunk with the fields crow-acp reads.
//
// It is decoded with encoding/json rather than into openai-go's
// ChatCompletionChunk: the SDK's reflective decoder, plus the gjson scan for
// "error" its stream runs on every event, cost ~13 µs a chunk, most of a
// turn's own overhead for a 200-token reply, against ~2 µs here. The SDK
// still builds and sends the request and splits the SSE stream.
//
// Decoding is lenient where servers differ: a field of an unexpected type
// (null, a number where text belongs) reads as empty instead of failing the
// whole chunk, tool-call arguments sent as a JSON object (not a string) keep
// their JSON text, and token counts may be written as floats.
type Chunk struct {
	Choices []ChunkChoice `json:"choices"`
	Usage   *ChunkUsage   `json:"usage"`
	// Error is set when the server reports a failure mid-stream in a data
	// event ({"error": {...}}); null counts as absent.
	Error json.RawMessage `json:"error"`
}

// ChunkChoice is one choice of a chunk; crow-acp reads only index 0.
type ChunkChoice struct {
	Index        int         `json:"index"`
	Delta        ChunkDelta  `json:"delta"`
	FinishReason lenientText `json:"finish_reason"`
}

// ChunkDelta is what a choice adds. ReasoningContent (DeepSeek, GLM, vLLM,
// llama.cpp) and Reasoning (OpenRouter, Ollama) are not OpenAI fields.
type ChunkDelta struct {
	Content          lenientText     `json:"content"`
	Refusal          lenientText     `json:"refusal"`
	ReasoningContent lenientText     `json:"reasoning_content"`
	Reasoning        lenientText     `json:"reasoning"`
	ToolCalls        []ChunkToolCall `json:"tool_calls"`
}

// ChunkToolCall is a piece of a tool call. Index is nil when the server
// leaves it out.
type ChunkToolCall struct {
	Index    *int        `json:"index"`
	ID       lenientText `json:"id"`
	Function struct {
		Name      lenientText   `json:"name"`
		Arguments jsonArguments `json:"arguments"`
	} `json:"function"`
}

// ChunkUsage is the token usage, usually in the last chunk.
type ChunkUsage struct {
	PromptTokens     count `json:"prompt_tokens"`
	CompletionTokens count `json:"completion_tokens"`
	TotalTokens      count `json:"total_tokens"`
}

// DecodeChunk decodes the data of one SSE event.
func DecodeChunk(data []byte) (Chunk, error) {
	var c Chunk
	err := json.Unmarshal(data, &c)
	if bytes.Equal(c.Error, []byte("null")) {
		c.Error = nil
	}
	return c, err
}

// lenientText is a JSON string; any other JSON value reads as "".
type lenientText string

func (t *lenientText) UnmarshalJSON(b []byte) error {
	*t = lenientText(jsonString(b))
	return nil
}

// jsonString returns the text of a JSON string value, or "" for any other
// value. Strings without escapes, the usual case for streamed tokens, are
// sliced out without a second decoding pass.
func jsonString(b []byte) string {
	if len(b) < 2 || b[0] != '"' {
		return ""
	}
	if inner := b[1 : len(b)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s
}

// jsonArguments is a tool call's arguments: a JSON string holding JSON, as
// OpenAI sends them, or the JSON object itself, as some servers do.
type jsonArguments string

func (a *jsonArguments) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		*a = jsonArguments(jsonString(b))
	case bytes.Equal(b, []byte("null")):
		*a = ""
	default:
		*a = jsonArguments(b)
	}
	return nil
}

// count is a token count written as an integer or a float; anything else
// (null, negative, non-numeric) reads as 0.
type count int

func (n *count) UnmarshalJSON(b []byte) error {
	var f float64
	if json.Unmarshal(b, &f) != nil || f < 0 || f > math.MaxInt32 {
		*n = 0
		return nil
	}
	*n = count(f)
	return nil
}
