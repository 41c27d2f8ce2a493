package provider

import (
	"encoding/json"
	"errors"
	"math"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Chunk is one streamed chat.completion.chunk with the fields crow-acp reads.
//
// Chunks are read with gjson instead of being decoded into openai-go's
// ChatCompletionChunk: the SDK's reflective decoder, plus the gjson scan
// for "error" its stream runs on every event, cost ~16 µs a chunk, most of
// a turn's own overhead for a 200-token reply, and encoding/json into this
// struct still ~4 µs; walking the parsed value costs ~1 µs. (gjson already
// comes with openai-go.) The SDK still builds and sends the request and
// splits the SSE stream.
//
// Reading is lenient where servers differ: a field of an unexpected type
// (null, a number where text belongs) reads as empty instead of failing the
// whole chunk, tool-call arguments sent as a JSON object (not a string) keep
// their JSON text, and token counts may be written as floats. What is not a
// JSON object, or has choices that are not an array of objects, is an error.
type Chunk struct {
	Choices []ChunkChoice
	Usage   *ChunkUsage
	// Error is set when the server reports a failure mid-stream in a data
	// event ({"error": {...}}); null counts as absent.
	Error json.RawMessage
}

// ChunkChoice is one choice of a chunk; crow-acp reads only index 0.
type ChunkChoice struct {
	Index        int
	Delta        ChunkDelta
	FinishReason string
}

// ChunkDelta is what a choice adds. ReasoningContent (DeepSeek, GLM, Kimi,
// vLLM, llama.cpp) and Reasoning (OpenRouter, Ollama, newer vLLM) are not
// OpenAI fields. Reasoning also holds the readable text of OpenRouter's
// reasoning_details when the delta has no reasoning field (they carry the
// same text when both are sent).
type ChunkDelta struct {
	Content          string
	Refusal          string
	ReasoningContent string
	Reasoning        string
	ToolCalls        []ChunkToolCall
}

// ChunkToolCall is a piece of a tool call. Index is nil when the server
// leaves it out. ThoughtSignature is Gemini 3's
// extra_content.google.thought_signature of the call.
type ChunkToolCall struct {
	Index            *int
	ID               string
	Name             string
	Arguments        string
	ThoughtSignature string
}

// ChunkUsage is the token usage, usually in the last chunk.
type ChunkUsage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	CachedTokens     int // prompt_tokens_details.cached_tokens, or DeepSeek's prompt_cache_hit_tokens
	ReasoningTokens  int // completion_tokens_details.reasoning_tokens
}

// DecodeChunk reads the data of one SSE event.
func DecodeChunk(data []byte) (Chunk, error) {
	var c Chunk
	if !gjson.ValidBytes(data) {
		return c, errors.New("not valid JSON")
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return c, errors.New("not a JSON object")
	}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "choices":
			var u *ChunkUsage
			c.Choices, u, err = readChoices(v)
			// Moonshot (Kimi) reports usage inside the choice instead of at
			// the top level (earendil-works/pi#2016); a top-level one wins.
			if u != nil && c.Usage == nil {
				c.Usage = u
			}
		case "usage":
			if u := readUsage(v); u != nil {
				c.Usage = u
			}
		case "x_groq":
			// Groq reports usage in x_groq.usage of the last chunk
			// (vercel/ai#1651); a standard usage field wins.
			if c.Usage == nil {
				c.Usage = readUsage(v.Get("usage"))
			}
		case "error":
			c.Error = nil
			if v.Type != gjson.Null {
				c.Error = json.RawMessage(v.Raw)
			}
		}
		return err == nil
	})
	return c, err
}

// readChoices reads the choices and the usage choice 0 may carry.
func readChoices(v gjson.Result) ([]ChunkChoice, *ChunkUsage, error) {
	if v.Type == gjson.Null {
		return nil, nil, nil
	}
	if !v.IsArray() {
		return nil, nil, errors.New("choices is not an array")
	}
	var out []ChunkChoice
	var usage *ChunkUsage
	var err error
	v.ForEach(func(_, cv gjson.Result) bool {
		if cv.Type == gjson.Null {
			out = append(out, ChunkChoice{})
			return true
		}
		if !cv.IsObject() {
			err = errors.New("a choice is not an object")
			return false
		}
		var ch ChunkChoice
		var u *ChunkUsage
		cv.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "index":
				switch f.Type {
				case gjson.Number:
					ch.Index = int(f.Num)
				case gjson.Null:
					ch.Index = 0
				default:
					err = errors.New("choice index is not a number")
				}
			case "delta":
				readDelta(f, &ch.Delta)
			case "finish_reason":
				ch.FinishReason = jsonText(f)
			case "usage":
				u = readUsage(f)
			}
			return err == nil
		})
		if ch.Index == 0 && u != nil {
			usage = u
		}
		out = append(out, ch)
		return err == nil
	})
	return out, usage, err
}

// readDelta reads a delta into d; fields it does not name are kept, as when
// a chunk repeats the key.
func readDelta(v gjson.Result, d *ChunkDelta) {
	if !v.IsObject() {
		return
	}
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "content":
			d.Content = jsonText(f)
		case "refusal":
			d.Refusal = jsonText(f)
		case "reasoning_content":
			d.ReasoningContent = jsonText(f)
		case "reasoning":
			d.Reasoning = jsonText(f)
		case "reasoning_details":
			if d.Reasoning == "" {
				d.Reasoning = reasoningDetails(f)
			}
		case "tool_calls":
			d.ToolCalls = nil
			if f.IsArray() {
				f.ForEach(func(_, tc gjson.Result) bool {
					d.ToolCalls = append(d.ToolCalls, readToolCall(tc))
					return true
				})
			}
		}
		return true
	})
}

// reasoningDetails joins the readable text of OpenRouter's reasoning_details
// array: {"type":"reasoning.text","text":...} and
// {"type":"reasoning.summary","summary":...}; encrypted entries carry none
// (https://openrouter.ai/docs/use-cases/reasoning-tokens, the schema in
// @openrouter/ai-sdk-provider's reasoning-details.ts).
func reasoningDetails(v gjson.Result) string {
	if !v.IsArray() {
		return ""
	}
	var out string
	v.ForEach(func(_, d gjson.Result) bool {
		switch d.Get("type").Str {
		case "reasoning.text":
			out += jsonText(d.Get("text"))
		case "reasoning.summary":
			out += jsonText(d.Get("summary"))
		}
		return true
	})
	return out
}

func readToolCall(v gjson.Result) ChunkToolCall {
	var tc ChunkToolCall
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "index":
			tc.Index = nil
			if f.Type == gjson.Number {
				i := int(f.Num)
				tc.Index = &i
			}
		case "id":
			tc.ID = jsonText(f)
		case "extra_content":
			tc.ThoughtSignature = jsonText(f.Get("google.thought_signature"))
		case "function":
			f.ForEach(func(k, g gjson.Result) bool {
				switch k.Str {
				case "name":
					tc.Name = jsonText(g)
				case "arguments":
					tc.Arguments = arguments(g)
				}
				return true
			})
		}
		return true
	})
	return tc
}

func readUsage(v gjson.Result) *ChunkUsage {
	if !v.IsObject() {
		return nil
	}
	u := &ChunkUsage{}
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			u.PromptTokens = count(f)
		case "completion_tokens":
			u.CompletionTokens = count(f)
		case "total_tokens":
			u.TotalTokens = count(f)
		case "prompt_tokens_details":
			if c := count(f.Get("cached_tokens")); c > 0 {
				u.CachedTokens = c
			}
		case "prompt_cache_hit_tokens":
			if u.CachedTokens == 0 {
				u.CachedTokens = count(f)
			}
		case "completion_tokens_details":
			u.ReasoningTokens = count(f.Get("reasoning_tokens"))
		}
		return true
	})
	return u
}

// jsonText is a JSON string's text, or "" for any other value. Invalid UTF-8 is
// replaced as encoding/json does.
func jsonText(v gjson.Result) string {
	if v.Type != gjson.String {
		return ""
	}
	if utf8.ValidString(v.Str) {
		return v.Str
	}
	var s string
	_ = json.Unmarshal([]byte(v.Raw), &s)
	return s
}

// arguments is a tool call's arguments: a JSON string holding JSON, as
// OpenAI sends them, or the JSON value itself, as some servers do.
func arguments(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return jsonText(v)
	case gjson.Null:
		return ""
	default:
		return v.Raw
	}
}

// count is a token count written as an integer or a float; anything else
// (null, negative, non-numeric, huge) reads as 0.
func count(v gjson.Result) int {
	if v.Type != gjson.Number || v.Num < 0 || v.Num > math.MaxInt32 {
		return 0
	}
	return int(v.Num)
}

// tokenCount is a count an SDK decoded as an integer, read as count reads
// JSON: negative or huge is 0 (a turn adds up its requests' counts, which
// must not overflow).
func tokenCount(n int64) int {
	if n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// usageOf is a request's usage from the counts a provider reported (each
// already read by count or tokenCount): a cached or reasoning count larger
// than the whole it is part of is not believed, and a missing total is the
// sum.
func usageOf(c ChunkUsage) Usage {
	u := Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, TotalTokens: c.TotalTokens,
		CachedTokens: min(c.CachedTokens, c.PromptTokens), ReasoningTokens: min(c.ReasoningTokens, c.CompletionTokens)}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}
