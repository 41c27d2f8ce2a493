package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func TestMistralToolCallID(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	if got := provider.MistralToolCallID("aB3dE6gH9"); got != "aB3dE6gH9" {
		t.Errorf("a valid id changed: %q", got)
	}
	seen := map[string]string{}
	for _, id := range []string{"call_abc", "chatcmpl-tool-5c8f2e4a9b1d4f63", "call_0_0a1b2c3d4e5f", "", "toolu_01A", "aB3dE6gH", "aB3dE6gH9x", "ünïcödé"} {
		got := provider.MistralToolCallID(id)
		if !valid.MatchString(got) {
			t.Errorf("%q -> %q, not 9 of [a-zA-Z0-9]", id, got)
		}
		if again := provider.MistralToolCallID(id); again != got {
			t.Errorf("%q maps to %q, then %q", id, got, again)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q map to the same id %q", id, other, got)
		}
		seen[got] = id
	}
}

// requestJSON decodes the nth recorded request.
func requestJSON(t *testing.T, srv *fakemodel.Server, n int) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(srv.Requests()[n], &body); err != nil {
		t.Fatal(err)
	}
	return body
}

var history = []provider.Message{
	{Role: provider.RoleUser, Content: "read"},
	{Role: provider.RoleAssistant, Reasoning: "need it", ToolCalls: []provider.ToolCall{{ID: "call_x_1", Name: "read_file", Arguments: `{}`}}},
	{Role: provider.RoleTool, ToolCallID: "call_x_1", Content: "data"},
	{Role: provider.RoleAssistant, Content: "done"},
	{Role: provider.RoleUser, Content: "again"},
}

func TestHistoryShapedPerModel(t *testing.T) {
	for _, tc := range []struct {
		model          string
		history        provider.ReasoningHistory
		wantReasoning  []any // reasoning_content of the two assistant messages (nil: absent)
		wantMistralIDs bool
	}{
		{"gpt-4o", "", []any{nil, nil}, false},
		{"deepseek-v4-pro", "", []any{"need it", ""}, false},
		{"deepseek/deepseek-reasoner", "", []any{"need it", ""}, false},
		{"deepseek-r1", "", []any{nil, nil}, false},
		{"glm-4.6", provider.ReasoningEcho, []any{"need it", nil}, false},
		{"deepseek-v4-pro", provider.ReasoningStrip, []any{nil, nil}, false},
		{"mistral-large-latest", "", []any{nil, nil}, true},
		{"devstral:24b", "", []any{nil, nil}, true},
	} {
		srv := startFake(t, fakemodel.Reply{Text: "ok"})
		req := provider.Request{Model: tc.model, Messages: history, ReasoningHistory: tc.history}
		if _, _, err := collect(t, client(srv, ""), req); err != nil {
			t.Fatal(err)
		}
		msgs := requestJSON(t, srv, 0)["messages"].([]any)
		for i, j := range []int{1, 3} {
			got, ok := msgs[j].(map[string]any)["reasoning_content"]
			if !ok {
				got = nil
			}
			if got != tc.wantReasoning[i] {
				t.Errorf("%s (%q): message %d reasoning_content %v, want %v", tc.model, tc.history, j, got, tc.wantReasoning[i])
			}
		}
		callID := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["id"]
		resultID := msgs[2].(map[string]any)["tool_call_id"]
		if callID != resultID {
			t.Errorf("%s: call id %v, result id %v", tc.model, callID, resultID)
		}
		if mapped := callID != "call_x_1"; mapped != tc.wantMistralIDs {
			t.Errorf("%s: id sent as %v", tc.model, callID)
		}
	}
}

func TestMaxCompletionTokensByName(t *testing.T) {
	for model, want := range map[string]string{"gpt-5": "max_completion_tokens", "o3-mini": "max_completion_tokens",
		"openai/gpt-5.1": "max_completion_tokens", "gpt-4o": "max_tokens", "o3x": "max_tokens"} {
		srv := startFake(t, fakemodel.Reply{Text: "ok"})
		if _, _, err := collect(t, client(srv, ""), provider.Request{Model: model, Messages: history, MaxTokens: 200}); err != nil {
			t.Fatal(err)
		}
		body := requestJSON(t, srv, 0)
		if body[want] != float64(200) || len(body) != 5 {
			t.Errorf("%s: body %v, want %s=200", model, body, want)
		}
	}
}

func rules(t *testing.T, text string) []fakemodel.Rule {
	t.Helper()
	r, err := fakemodel.ParseRules([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRefusedParameterIsDroppedOnceAndRemembered(t *testing.T) {
	srv := startFake(t)
	srv.SetRules(rules(t, "unknown-parameter stream_options\nopenai-max-completion-tokens model=prod-reasoner\n")...)
	srv.SetFallback(fakemodel.Reply{Text: "ok"})
	c := client(srv, "")
	req := provider.Request{Model: "prod-reasoner", Messages: history, MaxTokens: 50}
	// Refused for stream_options, then for max_tokens: each parameter is
	// dropped once, and the third request goes through.
	if _, res, err := collect(t, c, req); err != nil || res.Text != "ok" {
		t.Fatalf("err %v", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	body := requestJSON(t, srv, 2)
	if _, ok := body["stream_options"]; ok || body["max_completion_tokens"] != float64(50) || body["max_tokens"] != nil {
		t.Errorf("third request %v", body)
	}
	// Remembered: the next call goes through at once.
	if _, _, err := collect(t, c, req); err != nil || len(srv.Requests()) != 4 {
		t.Fatalf("err %v, %d requests, want 4", err, len(srv.Requests()))
	}
	// A refusal that persists is answered after one retry, not looped on.
	srv.SetRules(rules(t, "unknown-parameter messages\n")...)
	_, _, err := collect(t, c, provider.Request{Model: "gpt-4o", Messages: history})
	var api *provider.APIError
	if !errors.As(err, &api) || api.StatusCode != 400 || len(srv.Requests()) != 5 {
		t.Fatalf("err %v after %d requests, want a 400 after 5", err, len(srv.Requests()))
	}
	srv.SetRules(rules(t, "unknown-parameter stream_options\n")...)
	// Another client (another endpoint) starts from the defaults.
	before := len(srv.Requests())
	if _, _, err := collect(t, client(srv, ""), provider.Request{Model: "other", Messages: history}); err != nil {
		t.Fatal(err)
	}
	if _, ok := requestJSON(t, srv, before)["stream_options"]; !ok || len(srv.Requests()) != before+2 {
		t.Errorf("a fresh client did not start with stream_options (%d requests)", len(srv.Requests())-before)
	}
}

func TestUnrelatedBadRequestIsNotRetried(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Status: 400, Text: "messages: too many"}, fakemodel.Reply{Text: "ok"})
	_, _, err := collect(t, client(srv, ""), provider.Request{Model: "m", Messages: history})
	if err == nil || len(srv.Requests()) != 1 {
		t.Fatalf("err %v after %d requests, want the 400 after 1", err, len(srv.Requests()))
	}
	_ = context.Background
}

// Request.InlineThink overrides the name: the setting reaches the parser.
func TestStreamInlineThinkSetting(t *testing.T) {
	srv := fakemodel.Start()
	defer srv.Close()
	sse := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"plan</think>answer\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL()})
	for _, tc := range []struct {
		model           string
		setting         provider.InlineThink
		reasoning, text string
	}{
		{"my-finetune", provider.InlineThinkOpen, "plan", "answer"},
		{"my-finetune", provider.InlineThinkAuto, "", "plan</think>answer"},
		{"Qwen/QwQ-32B", provider.InlineThinkAuto, "plan", "answer"},
		{"Qwen/QwQ-32B", provider.InlineThinkTag, "", "plan</think>answer"},
	} {
		srv.Enqueue(fakemodel.Reply{RawSSE: sse})
		res, err := c.Stream(context.Background(), provider.Request{Model: tc.model, InlineThink: tc.setting,
			Messages: []provider.Message{{Role: provider.RoleUser, Content: "go"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reasoning != tc.reasoning || res.Text != tc.text {
			t.Errorf("%s %q: reasoning %q text %q, want %q and %q", tc.model, tc.setting, res.Reasoning, res.Text, tc.reasoning, tc.text)
		}
	}
}
