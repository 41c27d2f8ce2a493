package provider

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestResponsesStream: OpenAI's Responses API stream (as the fake model
// replays it, see fakemodel/responses.go) gives the reasoning summary as
// reasoning events, the output text as text, function calls as tool calls,
// and the reasoning items to send back.
func TestResponsesStream(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	c := NewResponses(OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	m.Enqueue(fakemodel.Reply{Reasoning: "Both files first.", ToolCalls: []fakemodel.ToolCall{
		{ID: "call_a", Name: "read_file", Arguments: `{"path":"a.txt"}`},
		{ID: "call_b", Name: "read_file", Arguments: `{"path":"b.txt"}`}}},
		fakemodel.Reply{Text: "a says alpha, b says beta."})
	var thoughts, text strings.Builder
	on := func(ev Event) error {
		switch ev.Kind {
		case EventReasoning:
			thoughts.WriteString(ev.Text)
		case EventText:
			text.WriteString(ev.Text)
		}
		return nil
	}
	req := Request{Model: "o4-mini", Messages: []Message{{Role: RoleSystem, Content: "be brief"}, {Role: RoleUser, Content: "read both"}},
		Tools: []Tool{{Name: "read_file", Description: "reads", Parameters: map[string]any{"type": "object"}}}}
	res, err := c.Stream(context.Background(), req, on)
	if err != nil {
		t.Fatal(err)
	}
	if thoughts.String() != "Both files first." || res.Reasoning != "Both files first." || text.Len() != 0 {
		t.Fatalf("thoughts %q, reasoning %q, text %q", thoughts.String(), res.Reasoning, text.String())
	}
	if len(res.ToolCalls) != 2 || res.ToolCalls[1].ID != "call_b" || res.ToolCalls[1].Arguments != `{"path":"b.txt"}` || res.FinishReason != FinishToolCalls {
		t.Fatalf("tool calls %+v, finish %q", res.ToolCalls, res.FinishReason)
	}
	if len(res.ReasoningItems) != 1 || res.ReasoningItems[0].EncryptedContent != "enc_1" || res.Usage == nil || res.Usage.PromptTokens == 0 {
		t.Fatalf("reasoning items %+v, usage %+v", res.ReasoningItems, res.Usage)
	}
	first := string(m.Requests()[0])
	for _, want := range []string{`"instructions":"be brief"`, `"store":false`, `"summary":"auto"`, `"reasoning.encrypted_content"`, `"type":"function"`} {
		if !strings.Contains(first, want) {
			t.Errorf("request lacks %s: %s", want, first)
		}
	}

	// The next request of the turn: the reasoning item goes back before
	// the function calls, then their outputs.
	next := req
	next.Messages = append(next.Messages,
		Message{Role: RoleAssistant, ToolCalls: res.ToolCalls, ReasoningItems: res.ReasoningItems},
		Message{Role: RoleTool, ToolCallID: "call_a", Content: "alpha"},
		Message{Role: RoleTool, ToolCallID: "call_b", Content: "beta"})
	// Without the reasoning item the provider refuses the request.
	bare := next
	bare.Messages = append([]Message(nil), next.Messages...)
	bare.Messages[2].ReasoningItems = nil
	_, err = c.Stream(context.Background(), bare, on)
	var api *APIError
	if !errors.As(err, &api) || api.StatusCode != 400 || !strings.Contains(api.Message, "without its required 'reasoning' item") {
		t.Fatalf("dropped reasoning item: %v", err)
	}
	res, err = c.Stream(context.Background(), next, on)
	if err != nil || res.Text != "a says alpha, b says beta." || res.FinishReason != FinishStop {
		t.Fatalf("second request: %+v %v", res, err)
	}
	var body struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(m.Requests()[2], &body); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, it := range body.Input {
		typ, _ := it["type"].(string)
		if typ == "" && it["role"] != nil {
			typ = "message" // an easy input message has no type
		}
		types = append(types, typ)
	}
	if got := strings.Join(types, ","); got != "message,reasoning,function_call,function_call,function_call_output,function_call_output" {
		t.Fatalf("input items %s", got)
	}
	if body.Input[1]["encrypted_content"] != "enc_1" {
		t.Fatalf("reasoning item sent back: %v", body.Input[1])
	}

}

// TestResponsesNonReasoningModel: models that are not reasoning models get
// no reasoning parameter (OpenAI refuses it for them).
func TestResponsesNonReasoningModel(t *testing.T) {
	p := responsesParams(Request{Model: "gpt-4.1", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, bodyShape{})
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "reasoning") {
		t.Fatalf("reasoning parameter sent to gpt-4.1: %s", b)
	}
}

// FuzzResponsesEvents: any sequence of event lines, decoded as openai-go
// decodes them, accumulates without panicking into a Result whose tool
// calls carry JSON-object arguments or an error.
func FuzzResponsesEvents(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.output_text.delta","delta":"hi"}` + "\n" + `{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n"}}` + "\n" + `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"a\""}` + "\n" + `{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n","arguments":"{\"a\":1}"}}`,
		`{"type":"response.output_item.done","item":{"type":"reasoning","id":"rs","encrypted_content":"\u0000\xff","summary":[{"text":"x"}]}}`,
		`{"type":"response.function_call_arguments.delta","output_index":7,"delta":"x"}`,
		`{"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}}`,
		`{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}`,
		`{"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`,
		`{"type":"error","error":{"message":"\u0000\u001b[31m","code":` + strings.Repeat("[", 300) + `}}`,
		"\x00\x1b[31m\xff", strings.Repeat(`{"type":"response.reasoning_summary_part.added"}`+"\n", 1000),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var acc responsesAccumulator
		for _, line := range strings.Split(string(in), "\n") {
			var ev responses.ResponseStreamEventUnion
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			if _, err := acc.add(ev); err != nil {
				var failed *responseFailed
				if errors.As(err, &failed) {
					_ = ParseOverflow([]byte(failed.body))
				}
				break
			}
		}
		res := acc.result()
		for _, c := range res.ToolCalls {
			if c.ArgumentsError == "" && !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("arguments %q are not JSON and not flagged", c.Arguments)
			}
		}
	})
}

// TestResponsesImages: an image part goes as an input_image data URL next
// to the text.
func TestResponsesImages(t *testing.T) {
	p := responsesParams(Request{Model: "gpt-4.1", Messages: []Message{{Role: RoleUser, Content: "What is this?",
		Parts: []ContentPart{{Type: "image", MimeType: "image/png", Data: "iVBORw0KGgo="}}}}}, bodyShape{})
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"text":"What is this?","type":"input_text"}`, `"image_url":"data:image/png;base64,iVBORw0KGgo="`, `"type":"input_image"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("lacks %s: %s", want, b)
		}
	}
}

// orgNotVerified is OpenAI's answer to reasoning.summary from an
// organization that is not verified (continuedev/continue#9854,
// OpenHands/software-agent-sdk#987 quote it).
const orgNotVerified = `{"error":{"message":"Your organization must be verified to generate reasoning summaries. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization. If you just verified, it can take up to 15 minutes for access to propagate.","type":"invalid_request_error","param":"reasoning.summary","code":"unsupported_value"}}`

// TestResponsesDropsRefusedSummary: the parameter-refusal retry of chat
// completions covers the Responses API: a refused reasoning.summary is
// dropped, the request sent once more, and the refusal remembered for the
// model; the encrypted reasoning items are still asked for.
func TestResponsesDropsRefusedSummary(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	c := NewResponses(OpenAIConfig{BaseURL: m.URL()})
	m.Enqueue(fakemodel.Reply{Status: 400, ErrorBody: orgNotVerified}, fakemodel.Reply{Text: "ok"}, fakemodel.Reply{Text: "again"})
	req := Request{Model: "gpt-5", Messages: []Message{{Role: RoleUser, Content: "hi"}}}
	for _, want := range []string{"ok", "again"} {
		res, err := c.Stream(context.Background(), req, nil)
		if err != nil || res.Text != want {
			t.Fatalf("got %q, %v; want %q", res.Text, err, want)
		}
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (one refused, its retry, the next turn)", len(reqs))
	}
	for i, r := range reqs {
		var body struct {
			Reasoning struct {
				Summary string `json:"summary"`
			} `json:"reasoning"`
			Include []string `json:"include"`
		}
		if err := json.Unmarshal(r, &body); err != nil {
			t.Fatal(err)
		}
		if wantSummary := i == 0; (body.Reasoning.Summary != "") != wantSummary {
			t.Errorf("request %d: reasoning.summary %q", i+1, body.Reasoning.Summary)
		}
		if len(body.Include) != 1 || body.Include[0] != "reasoning.encrypted_content" {
			t.Errorf("request %d: include %v", i+1, body.Include)
		}
	}
	// Another 400 is not a refused parameter: no retry.
	m.Enqueue(fakemodel.Reply{Status: 400, ErrorBody: `{"error":{"message":"Invalid 'input[0].content': empty string.","type":"invalid_request_error","param":"input[0].content","code":"empty_string"}}`})
	if _, err := c.Stream(context.Background(), req, nil); err == nil || len(m.Requests()) != 4 {
		t.Fatalf("err %v after %d requests, want an error after 4", err, len(m.Requests()))
	}
}

// TestResponsesToolCallIDs: call ids go through the same per-model layer
// as chat completions (bodyShape.toolCallID). OpenAI's own models take any
// call id back, so by default the ids are sent as stored; a configured
// style applies to function_call and function_call_output alike.
func TestResponsesToolCallIDs(t *testing.T) {
	msgs := []Message{{Role: RoleUser, Content: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_0_abcdef012345", Name: "read_file", Arguments: "{}"}}},
		{Role: RoleTool, ToolCallID: "call_0_abcdef012345", Content: "x"}}
	for style, want := range map[ToolCallIDStyle]string{
		ToolCallIDsAuto:    "call_0_abcdef012345",
		ToolCallIDsMistral: MistralToolCallID("call_0_abcdef012345"),
	} {
		req := Request{Model: "gpt-5", Messages: msgs, ToolCallIDs: style}
		b, err := json.Marshal(responsesParams(req, shapeFor(req)))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), `"call_id":"`+want+`"`); n != 2 {
			t.Errorf("%q: call_id %q appears %d times, want 2: %s", style, want, n, b)
		}
	}
}

// TestResponsesErrors: the error texts of the Responses API as OpenAI
// sends them. A context overflow is recognised as an HTTP 400 and as an
// error event in the stream (nested error object, as OpenAI sends it; flat,
// as openai-go's ResponseErrorEvent declares it); a rate limit is a
// retryable 429 with its Retry-After.
func TestResponsesErrors(t *testing.T) {
	const overflowMsg = "Your input exceeds the context window of this model. Please adjust your input and try again."
	overflowBody := `{"error":{"message":"` + overflowMsg + `","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
	rateLimit := `{"error":{"message":"Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	for _, tc := range []struct {
		name      string
		reply     fakemodel.Reply
		overflow  bool
		status    int
		retryable bool
		text      string
	}{
		{"overflow 400", fakemodel.Reply{Status: 400, ErrorBody: overflowBody}, true, 400, false, overflowMsg},
		{"overflow event (nested, as sent)", fakemodel.Reply{RawSSE: created +
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\",\"message\":\"" + overflowMsg + "\",\"param\":\"input\"}}\n\n"},
			true, 0, false, overflowMsg},
		{"overflow event (flat, as declared)", fakemodel.Reply{RawSSE: created +
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"context_length_exceeded\",\"message\":\"" + overflowMsg + "\",\"param\":\"input\"}\n\n"},
			true, 0, false, overflowMsg},
		{"rate limit 429", fakemodel.Reply{Status: 429, Headers: map[string]string{"Retry-After": "2"}, ErrorBody: rateLimit}, false, 429, true, "Rate limit reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fakemodel.Start()
			defer m.Close()
			c := NewResponses(OpenAIConfig{BaseURL: m.URL()})
			m.Enqueue(tc.reply)
			_, err := c.Stream(context.Background(), Request{Model: "gpt-5", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err %v, want one saying %q", err, tc.text)
			}
			if ov := OverflowOf(err); (ov != nil) != tc.overflow || (ov != nil && ov.Shape != "openai") {
				t.Errorf("overflow %+v, want %v", ov, tc.overflow)
			}
			var api *APIError
			if tc.status != 0 {
				if !errors.As(err, &api) || api.StatusCode != tc.status || api.Retryable() != tc.retryable {
					t.Fatalf("err %#v, want an APIError %d (retryable %v)", err, tc.status, tc.retryable)
				}
				if tc.retryable && api.RetryAfter != "2" {
					t.Errorf("Retry-After %q", api.RetryAfter)
				}
			}
		})
	}
}

// TestResponsesUsageClampedLikeChatCompletions: counts an endpoint
// reports out of range (negative, past what an int32 holds: a turn adds
// them up, and a total of -9223372036854775804 reached the prompt
// response) read as 0 through the Responses API exactly as through chat
// completions, and a total read as 0 is the sum of the others.
func TestResponsesUsageClampedLikeChatCompletions(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	cases := []fakemodel.Usage{
		{PromptTokens: math.MaxInt64, CompletionTokens: 5, TotalTokens: math.MaxInt64},
		{PromptTokens: 12, CompletionTokens: -7, TotalTokens: math.MinInt64 + 3},
		{PromptTokens: 1 << 40, CompletionTokens: 9, TotalTokens: -1},
		{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17},
	}
	want := []Usage{
		{PromptTokens: 0, CompletionTokens: 5, TotalTokens: 5},
		{PromptTokens: 12, CompletionTokens: 0, TotalTokens: 12},
		{PromptTokens: 0, CompletionTokens: 9, TotalTokens: 9},
		{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17},
	}
	clients := map[string]Client{
		"responses": NewResponses(OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"}),
		"chat":      NewOpenAI(OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"}),
	}
	for name, c := range clients {
		for i, u := range cases {
			m.Enqueue(fakemodel.Reply{Text: "ok", Usage: &u})
			res, err := c.Stream(context.Background(), Request{Model: "o4-mini", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, func(Event) error { return nil })
			if err != nil {
				t.Fatalf("%s %d: %v", name, i, err)
			}
			if res.Usage == nil || *res.Usage != want[i] {
				t.Errorf("%s: usage %+v read as %+v, want %+v", name, u, res.Usage, want[i])
			}
		}
	}
}
