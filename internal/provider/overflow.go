package provider

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Overflow is a request the endpoint refused because its prompt does not
// fit the model's context window, with what the endpoint said about sizes.
type Overflow struct {
	// Window is the context window the endpoint named, in tokens; 0 when
	// the error did not say (OpenAI's bare context_length_exceeded).
	Window int
	// Prompt is the request's size by the endpoint's count, in tokens; 0
	// when the error did not say.
	Prompt int
	// Shape names the error form that matched: "openai", "vllm",
	// "llama.cpp", "anthropic", "gemini".
	Shape string
}

// maxOverflowText bounds how much of an error message is searched: the
// numbers are in the first sentence of every known form.
const maxOverflowText = 4 << 10

// maxWindow bounds a believable window; larger numbers are read as unknown.
const maxWindow = 100_000_000

// The message forms, each checked against the provider's own text (each
// compiled on first use: package initialisers run before initialize is
// answered, TestStartupInitCost):
var (
	// OpenAI and vLLM (vllm/entrypoints/openai/serving_engine.py), DeepSeek:
	// "This model's maximum context length is 8192 tokens. However, you
	// requested 8334 tokens (338 in the messages, 7996 in the completion)."
	// and "... However, your messages resulted in 8227 tokens." and
	// "... and your request has 2778 input tokens".
	reMaxContext = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)maximum context length is (\d+) tokens`) })
	reInMessages = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\((\d+) in the messages`) })
	reResulted   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:messages resulted in|request has|you requested) (\d+) (?:input )?tokens`)
	})
	// Anthropic and Anthropic-compatible proxies: "prompt is too long:
	// 210000 tokens > 200000 maximum".
	reAnthropic = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)prompt is too long: (\d+) tokens > (\d+) maximum`)
	})
	// Gemini (OpenAI-compatible endpoint): "The input token count (1300000)
	// exceeds the maximum number of tokens allowed (1048575)." Some builds
	// drop the first number.
	reGemini = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)input token count(?: \(?(\d+)\)?)? exceeds the maximum number of tokens allowed(?: \(?(\d+)\)?)?`)
	})
	// llama.cpp's prose (tools/server/server-context.cpp), for error events
	// that lost the typed fields: "request (4476 tokens) exceeds the
	// available context size (4096 tokens)".
	reLlamaCpp = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)request \((\d+) tokens\) exceeds (?:the available )?context size \((\d+) tokens\)`)
	})
)

// ParseOverflow reads an endpoint's error body (JSON or plain text) and
// reports the context overflow it describes, or nil when it is about
// something else. The body is untrusted: any bytes are accepted, numbers
// that cannot be a window are read as unknown.
func ParseOverflow(body []byte) *Overflow {
	e := decodeErrorFields(body)
	if e.typ == "exceed_context_size_error" {
		// llama.cpp: {"error":{"code":400,"message":"...","type":
		// "exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}
		// (server_task_result_error::to_json), sent with status 400 (500 in
		// older builds).
		return &Overflow{Window: sane(e.nCtx), Prompt: sane(e.nPrompt), Shape: "llama.cpp"}
	}
	msg := e.message
	if msg == "" {
		msg = string(body)
	}
	if len(msg) > maxOverflowText {
		msg = msg[:maxOverflowText]
	}
	if m := reMaxContext().FindStringSubmatch(msg); m != nil {
		o := &Overflow{Window: atoiSane(m[1]), Shape: "vllm"}
		if e.code == "context_length_exceeded" {
			o.Shape = "openai"
		}
		if p := reInMessages().FindStringSubmatch(msg); p != nil {
			o.Prompt = atoiSane(p[1])
		} else if p := reResulted().FindStringSubmatch(msg); p != nil {
			o.Prompt = atoiSane(p[1])
		}
		return o
	}
	if m := reAnthropic().FindStringSubmatch(msg); m != nil {
		return &Overflow{Prompt: atoiSane(m[1]), Window: atoiSane(m[2]), Shape: "anthropic"}
	}
	if m := reGemini().FindStringSubmatch(msg); m != nil {
		return &Overflow{Prompt: atoiSane(m[1]), Window: atoiSane(m[2]), Shape: "gemini"}
	}
	if m := reLlamaCpp().FindStringSubmatch(msg); m != nil {
		return &Overflow{Prompt: atoiSane(m[1]), Window: atoiSane(m[2]), Shape: "llama.cpp"}
	}
	if e.code == "context_length_exceeded" {
		// OpenAI's code without numbers in the message.
		return &Overflow{Shape: "openai"}
	}
	return nil
}

// errorFields are the parts of an error body overflow detection reads.
type errorFields struct {
	message, code, typ string
	nPrompt, nCtx      int64
}

// decodeErrorFields reads {"error":{...}}, {"error":"..."}, {"message":...}
// and {"detail":"..."} bodies; anything else leaves the fields empty.
func decodeErrorFields(body []byte) errorFields {
	var out errorFields
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		// Some proxies wrap the error in an array (Gemini behind a gateway).
		var list []json.RawMessage
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return out
		}
		if json.Unmarshal(list[0], &v) != nil {
			return out
		}
	}
	var o struct {
		Message json.RawMessage `json:"message"`
		Code    json.RawMessage `json:"code"`
		Type    json.RawMessage `json:"type"`
		NPrompt json.RawMessage `json:"n_prompt_tokens"`
		NCtx    json.RawMessage `json:"n_ctx"`
	}
	if len(v.Error) > 0 && json.Unmarshal(v.Error, &o) == nil {
		out.message, out.code, out.typ = jsonString(o.Message), jsonString(o.Code), jsonString(o.Type)
		out.nPrompt, out.nCtx = jsonInt(o.NPrompt), jsonInt(o.NCtx)
	} else if s := jsonString(v.Error); s != "" {
		out.message = s
	}
	if out.message == "" {
		out.message = jsonString(v.Message)
	}
	if out.message == "" {
		out.message = jsonString(v.Detail)
	}
	return out
}

// jsonString is the value of a JSON string, "" for anything else.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonInt is the value of a JSON integer, 0 for anything else.
func jsonInt(raw json.RawMessage) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func sane(n int64) int {
	if n <= 0 || n > maxWindow {
		return 0
	}
	return int(n)
}

func atoiSane(s string) int {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return sane(n)
}

// overflowEventError is a context overflow the endpoint reported as an
// error event inside a stream it had already started (llama.cpp's streamed
// completions can).
type overflowEventError struct {
	overflow *Overflow
	message  string
}

func (e *overflowEventError) Error() string {
	return "streaming: the endpoint refused the request: the prompt does not fit the model's context window: " + e.message
}

// OverflowOf reports the context overflow err describes: an *APIError with
// Overflow set, or an overflow reported mid-stream. nil otherwise.
func OverflowOf(err error) *Overflow {
	var api *APIError
	if errors.As(err, &api) && api.Overflow != nil {
		return api.Overflow
	}
	var ev *overflowEventError
	if errors.As(err, &ev) {
		return ev.overflow
	}
	return nil
}
