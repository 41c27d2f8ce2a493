package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// endlessSSE serves an event stream: first the events of head, then those
// of next(i) for i = 0, 1, ... until the client goes or cap events.
func endlessSSE(t *testing.T, head []string, next func(i int) string, cap int) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range head {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
		for i := 0; i < cap; i++ {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", next(i)); err != nil {
				return
			}
		}
	}))
	t.Cleanup(hs.Close)
	return hs
}

var limitReq = Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "go"}}}

// The Responses API's reply is bounded like chat completions': its text,
// one call's arguments and the number of its tool calls (each grew without
// end before; the arguments were also copied whole at every delta).
func TestResponsesOutputBounded(t *testing.T) {
	const limit = 64 << 10
	chunk := strings.Repeat("x", 1000)
	call := func(i int) string {
		return fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":{"type":"function_call","id":"fc_%d","call_id":"call_%d","name":"read_file","arguments":""}}`, i, i, i)
	}
	for _, tc := range []struct {
		name  string
		head  []string
		next  func(int) string
		what  string
		limit int
	}{
		{"text", nil, func(i int) string {
			return fmt.Sprintf(`{"type":"response.output_text.delta","output_index":0,"content_index":0,"item_id":"m","delta":"%s"}`, chunk)
		}, LimitReply, limit},
		{"arguments", []string{call(0)}, func(i int) string {
			return fmt.Sprintf(`{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_0","delta":"%s"}`, chunk)
		}, LimitArguments, limit},
		{"tool calls", nil, call, LimitToolCalls, MaxToolCalls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := endlessSSE(t, tc.head, tc.next, 100000)
			c := NewResponses(OpenAIConfig{BaseURL: hs.URL, MaxReplyBytes: limit, MaxArgumentBytes: limit, Timeout: 20 * time.Second})
			_, err := c.Stream(context.Background(), limitReq, nil)
			var le *LimitError
			if !errors.As(err, &le) || le.What != tc.what || le.Limit != tc.limit {
				t.Fatalf("err %v, want a %s LimitError of %d", err, tc.what, tc.limit)
			}
		})
	}
}

// Chat completions: a reply of more than MaxToolCalls tool calls ends with
// a LimitError, the calls up to it kept.
func TestChatToolCallsBounded(t *testing.T) {
	hs := endlessSSE(t, nil, func(i int) string {
		return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{}"}}]}}]}`, i, i)
	}, 100000)
	c := NewOpenAI(OpenAIConfig{BaseURL: hs.URL, Timeout: 20 * time.Second})
	res, err := c.Stream(context.Background(), limitReq, nil)
	var le *LimitError
	if !errors.As(err, &le) || le.What != LimitToolCalls || !strings.Contains(err.Error(), fmt.Sprint(MaxToolCalls, " tool calls")) {
		t.Fatalf("err %v, want the tool-call limit", err)
	}
	if n := len(res.ToolCalls); n != MaxToolCalls+1 {
		t.Errorf("kept %d tool calls, want the %d streamed (one past the limit)", n, MaxToolCalls+1)
	}
}
