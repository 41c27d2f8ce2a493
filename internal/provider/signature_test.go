package provider_test

import (
	"context"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// Gemini 3's thought signature on a tool call is read from the stream and
// sent back with the call to Gemini models only.
func TestThoughtSignatureEcho(t *testing.T) {
	srv := fakemodel.Start()
	defer srv.Close()
	calls := `data: {"choices":[{"delta":{"role":"assistant","tool_calls":[{"extra_content":{"google":{"thought_signature":"sig-A"}},"function":{"arguments":"{}","name":"read_file"},"id":"function-call-1","type":"function"},{"function":{"arguments":"{}","name":"read_file"},"id":"function-call-2","type":"function"}]},"finish_reason":"stop","index":0}],"object":"chat.completion.chunk"}` + "\n\ndata: [DONE]\n\n"
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL()})
	srv.Enqueue(fakemodel.Reply{RawSSE: calls})
	user := provider.Message{Role: provider.RoleUser, Content: "go"}
	res, err := c.Stream(context.Background(), provider.Request{Model: "gemini-3-pro-preview", Messages: []provider.Message{user}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 2 || res.ToolCalls[0].ThoughtSignature != "sig-A" || res.ToolCalls[1].ThoughtSignature != "" {
		t.Fatalf("calls %+v", res.ToolCalls)
	}
	// The history as the agent rebuilds it from its store: no signatures.
	stored := []provider.ToolCall{{ID: "function-call-1", Name: "read_file", Arguments: "{}"}, {ID: "function-call-2", Name: "read_file", Arguments: "{}"}}
	history := []provider.Message{user, {Role: provider.RoleAssistant, ToolCalls: stored},
		{Role: provider.RoleTool, ToolCallID: "function-call-1", Content: "a"}, {Role: provider.RoleTool, ToolCallID: "function-call-2", Content: "b"}}
	// One conversation's body cache across a switch to another model: the
	// encoded calls with their signatures are not reused for it.
	cache := &provider.BodyCache{}
	for _, tc := range []struct {
		model string
		want  int // extra_content fields in the request
	}{{"gemini-3-pro-preview", 1}, {"google/gemini-3-flash-preview", 1}, {"qwen3-coder", 0}, {"gemini-3-pro-preview", 1}} {
		srv.Enqueue(fakemodel.Reply{Text: "ok"})
		if _, err := c.Stream(context.Background(), provider.Request{Model: tc.model, Messages: history, BodyCache: cache}, nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		body := string(reqs[len(reqs)-1])
		if n := strings.Count(body, `"extra_content":{"google":{"thought_signature":"sig-A"}}`); n != tc.want || strings.Count(body, "extra_content") != tc.want {
			t.Errorf("%s: %d signatures sent, want %d: %s", tc.model, n, tc.want, body)
		}
	}
}
