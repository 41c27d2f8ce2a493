package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// overflowBodies are context-overflow errors as each provider sends them.
// Sources:
//   - OpenAI: {"error":{"message":"This model's maximum context length is
//     8192 tokens. However, you requested 8334 tokens (338 in the messages,
//     7996 in the completion). ...","type":"invalid_request_error","param":
//     "messages","code":"context_length_exceeded"}} (langroid/langroid#820,
//     mckaywrigley/chatbot-ui#102), and "However, your messages resulted in
//     8227 tokens" (crewAIInc/crewAI-examples#121).
//   - vLLM (vllm/entrypoints/openai/serving_engine.py) and DeepSeek:
//     {"object":"error","message":"This model's maximum context length is
//     131072 tokens. However, you requested 351430 tokens. ...","type":
//     "BadRequestError","code":400} (THUDM/LongBench#104).
//   - llama.cpp (tools/server/server-context.cpp, server_task_result_error::
//     to_json adds n_prompt_tokens and n_ctx to the error object of type
//     exceed_context_size_error); 400 today, 500 in older builds.
//   - Anthropic-compatible: "prompt is too long: 210000 tokens > 200000
//     maximum" (type invalid_request_error).
//   - Gemini's OpenAI-compatible endpoint: [{"error":{"code":400,"message":
//     "The input token count (1300000) exceeds the maximum number of tokens
//     allowed (1048575).","status":"INVALID_ARGUMENT"}}].
var overflowBodies = []struct {
	name           string
	status         int
	body           string
	window, prompt int
	shape          string
}{
	{"openai requested", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 8334 tokens (338 in the messages, 7996 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 8192, 338, "openai"},
	{"openai resulted", 400, `{"error":{"message":"This model's maximum context length is 16385 tokens. However, your messages resulted in 33625 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 16385, 33625, "openai"},
	{"openai code only", 400, `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, 0, 0, "openai"},
	{"vllm", 400, `{"object":"error","message":"This model's maximum context length is 131072 tokens. However, you requested 351430 tokens. Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, 131072, 351430, "vllm"},
	{"vllm input tokens", 400, `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None","type":"BadRequestError","param":null,"code":400}}`, 4096, 2778, "vllm"},
	{"deepseek", 400, `{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70123 tokens (70123 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`, 65536, 70123, "vllm"},
	{"llama.cpp 400", 400, `{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}`, 4096, 4476, "llama.cpp"},
	{"llama.cpp 500", 500, `{"error":{"code":500,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9001,"n_ctx":8192}}`, 8192, 9001, "llama.cpp"},
	{"anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, 200000, 210000, "anthropic"},
	{"gemini", 400, `[{"error":{"code":400,"message":"The input token count (1300000) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}]`, 1048575, 1300000, "gemini"},
	{"gemini one number", 400, `{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, 1048576, 0, "gemini"},
	{"plain text", 400, `This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.`, 32768, 40000, "vllm"},
}

func TestParseOverflow(t *testing.T) {
	for _, c := range overflowBodies {
		got := ParseOverflow([]byte(c.body))
		if got == nil {
			t.Errorf("%s: not recognised as an overflow", c.name)
			continue
		}
		if got.Window != c.window || got.Prompt != c.prompt || got.Shape != c.shape {
			t.Errorf("%s: got %+v, want window %d prompt %d shape %s", c.name, *got, c.window, c.prompt, c.shape)
		}
	}
	for _, body := range []string{
		`{"error":{"message":"Rate limit reached for gpt-4o","type":"rate_limit_error","code":"rate_limit_exceeded"}}`,
		`{"error":"model 'qwen3:8b' not found"}`,
		`{"error":{"message":"Invalid 'messages' type: expected array","type":"invalid_request_error"}}`,
		`{"error":{"type":"exceed_context_size_errorx","n_ctx":4096}}`,
		``, `null`, `[]`, `[1]`, "\x00\xff",
	} {
		if got := ParseOverflow([]byte(body)); got != nil {
			t.Errorf("%q read as an overflow: %+v", body, *got)
		}
	}
	// Numbers that cannot be a window are unknown, not trusted.
	got := ParseOverflow([]byte(`{"error":{"type":"exceed_context_size_error","n_prompt_tokens":-5,"n_ctx":99999999999999}}`))
	if got == nil || got.Window != 0 || got.Prompt != 0 {
		t.Errorf("absurd numbers: %+v", got)
	}
}

// TestStreamReportsOverflow: every provider's overflow body, at its status,
// reaches the caller as an *APIError carrying the overflow, and is not
// retryable (llama.cpp's 500 included).
func TestStreamReportsOverflow(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	c := NewOpenAI(OpenAIConfig{BaseURL: m.URL()})
	for _, tc := range overflowBodies {
		m.Enqueue(fakemodel.Reply{Status: tc.status, ErrorBody: tc.body})
		_, err := c.Stream(context.Background(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, nil)
		var api *APIError
		if !errors.As(err, &api) || api.StatusCode != tc.status {
			t.Fatalf("%s: error %v, want an APIError with status %d", tc.name, err, tc.status)
		}
		ov := OverflowOf(err)
		if ov == nil || ov.Window != tc.window {
			t.Errorf("%s: overflow %+v, want window %d", tc.name, ov, tc.window)
		}
		if api.Retryable() {
			t.Errorf("%s: an overflow is retryable", tc.name)
		}
	}
	// Mid-stream: an error event of llama.cpp's shape.
	m.Enqueue(fakemodel.Reply{RawSSE: "data: {\"error\":{\"code\":400,\"message\":\"request (5000 tokens) exceeds the available context size (4096 tokens)\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":5000,\"n_ctx\":4096}}\n\n"})
	_, err := c.Stream(context.Background(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, nil)
	if ov := OverflowOf(err); ov == nil || ov.Window != 4096 || ov.Prompt != 5000 {
		t.Fatalf("error event: %v (overflow %+v)", err, ov)
	}
	if errors.Is(err, ErrIncompleteStream) {
		t.Error("an overflow event reads as a cut stream, which is retried")
	}
}

// FuzzParseOverflow: any body parses without panicking, and what it
// reports is believable.
func FuzzParseOverflow(f *testing.F) {
	for _, c := range overflowBodies {
		f.Add([]byte(c.body))
	}
	f.Add([]byte("\x00\x01\x02\x1b[31mprompt is too long: 1 tokens > 2 maximum\x7f"))
	f.Add([]byte("maximum context length is \xff\xfe tokens"))
	f.Add([]byte(`{"error":{"message":"` + strings.Repeat("maximum context length is 9 tokens ", 5000) + `"}}`))
	f.Add([]byte(strings.Repeat("[", 100000)))
	f.Add([]byte(`{"error":{"type":"exceed_context_size_error","n_ctx":1e309,"n_prompt_tokens":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		o := ParseOverflow(body)
		if o == nil {
			return
		}
		if o.Window < 0 || o.Window > maxWindow || o.Prompt < 0 || o.Prompt > maxWindow {
			t.Fatalf("unbelievable numbers %+v", *o)
		}
		if o.Shape == "" {
			t.Fatal("no shape")
		}
	})
}
