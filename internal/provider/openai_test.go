package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func startFake(t *testing.T, replies ...fakemodel.Reply) *fakemodel.Server {
	t.Helper()
	srv := fakemodel.Start()
	t.Cleanup(srv.Close)
	srv.Enqueue(replies...)
	return srv
}

func client(srv *fakemodel.Server, apiKey string) *provider.OpenAIClient {
	return provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL(), APIKey: apiKey, IdleTimeout: 10 * time.Second})
}

var simpleReq = provider.Request{
	Model:    "test-model",
	Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
}

// collect runs one stream and returns its events.
func collect(t *testing.T, c provider.Client, req provider.Request) ([]provider.Event, *provider.Result, error) {
	t.Helper()
	var evs []provider.Event
	res, err := c.Stream(context.Background(), req, func(e provider.Event) error {
		evs = append(evs, e)
		return nil
	})
	if res == nil {
		t.Fatalf("nil Result (err %v)", err)
	}
	return evs, res, err
}

func texts(evs []provider.Event, kind provider.EventKind) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e.Text)
		}
	}
	return out
}

func TestStreamTextInOrder(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "Hello there, brave  new world", Usage: &fakemodel.Usage{PromptTokens: 12, CompletionTokens: 6, TotalTokens: 18}})
	evs, res, err := collect(t, client(srv, ""), simpleReq)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(evs, provider.EventText), []string{"Hello ", "there, ", "brave  ", "new ", "world"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("text deltas %q, want %q", got, want)
	}
	last := evs[len(evs)-2:]
	if last[0].Kind != provider.EventFinish || last[0].FinishReason != provider.FinishStop || last[1].Kind != provider.EventUsage {
		t.Fatalf("tail events %+v", last)
	}
	want := provider.Usage{PromptTokens: 12, CompletionTokens: 6, TotalTokens: 18}
	if res.Text != "Hello there, brave  new world" || res.FinishReason != provider.FinishStop || res.Usage == nil || *res.Usage != want {
		t.Fatalf("result %+v usage %+v", res, res.Usage)
	}
}

func TestStreamChunkedText(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: strings.Repeat("abcd", 10), Chunks: 4})
	evs, res, err := collect(t, client(srv, ""), simpleReq)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(evs, provider.EventText); len(got) != 4 || got[0] != "abcdabcdab" {
		t.Fatalf("deltas %q", got)
	}
	if res.Usage == nil || res.Usage.TotalTokens == 0 {
		t.Fatalf("default usage missing: %+v", res.Usage)
	}
}

func TestStreamReasoning(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Reasoning: "First I think. Then I answer.", Text: "42"})
	evs, res, err := collect(t, client(srv, ""), simpleReq)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Kind != provider.EventReasoning {
		t.Fatalf("first event %+v, want reasoning", evs[0])
	}
	if got := strings.Join(texts(evs, provider.EventReasoning), ""); got != "First I think. Then I answer." {
		t.Fatalf("reasoning deltas %q", got)
	}
	if res.Reasoning != "First I think. Then I answer." || res.Text != "42" {
		t.Fatalf("result %+v", res)
	}
}

func TestStreamToolCalls(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{
		Text: "Looking.",
		ToolCalls: []fakemodel.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path":"main.go","limit":100}`},
			{Name: "list_dir", Arguments: `{"path":"."}`}, // no id sent
			{ID: "call_3", Name: "bad", Arguments: `{"path":`},
		},
	})
	evs, res, err := collect(t, client(srv, ""), simpleReq)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != provider.FinishToolCalls {
		t.Fatalf("finish %q", res.FinishReason)
	}
	if len(res.ToolCalls) != 3 {
		t.Fatalf("calls %+v", res.ToolCalls)
	}
	c0, c1, c2 := res.ToolCalls[0], res.ToolCalls[1], res.ToolCalls[2]
	if c0.ID != "call_1" || c0.Name != "read_file" || c0.Arguments != `{"path":"main.go","limit":100}` || c0.ArgumentsError != "" {
		t.Fatalf("call 0 %+v", c0)
	}
	if !strings.HasPrefix(c1.ID, "call_1_") || c1.Name != "list_dir" || c1.Arguments != `{"path":"."}` {
		t.Fatalf("call 1 %+v", c1)
	}
	if c2.ArgumentsError == "" || c2.Arguments != `{"path":` {
		t.Fatalf("call 2 should be kept with an error: %+v", c2)
	}
	// Deltas arrive in pieces and carry the call so far.
	var pieces int
	var lastArgs string
	for _, e := range evs {
		if e.Kind == provider.EventToolCallDelta && e.ToolIndex == 0 {
			pieces++
			if !strings.HasPrefix(c0.Arguments, e.ToolCall.Arguments) || len(e.ToolCall.Arguments) < len(lastArgs) {
				t.Fatalf("delta args %q do not grow toward %q", e.ToolCall.Arguments, c0.Arguments)
			}
			lastArgs = e.ToolCall.Arguments
		}
	}
	if pieces < 3 || lastArgs != c0.Arguments {
		t.Fatalf("%d deltas for call 0, last %q", pieces, lastArgs)
	}
}

func TestStreamFinishReasons(t *testing.T) {
	for _, fr := range []provider.FinishReason{provider.FinishStop, provider.FinishLength, provider.FinishContentFilter, provider.FinishToolCalls} {
		t.Run(string(fr), func(t *testing.T) {
			srv := startFake(t, fakemodel.Reply{Text: "x", Finish: string(fr)})
			evs, res, err := collect(t, client(srv, ""), simpleReq)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != fr {
				t.Fatalf("finish %q", res.FinishReason)
			}
			var n int
			for _, e := range evs {
				if e.Kind == provider.EventFinish {
					n++
					if e.FinishReason != fr {
						t.Fatalf("event %+v", e)
					}
				}
			}
			if n != 1 {
				t.Fatalf("%d finish events", n)
			}
		})
	}
}

func TestStreamServerError(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Status: 500, Text: "the GPU caught fire"})
	_, res, err := collect(t, client(srv, ""), simpleReq)
	var ae *provider.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err %T %v, want *APIError", err, err)
	}
	if ae.StatusCode != 500 || ae.Message != "the GPU caught fire" || !ae.Retryable() {
		t.Fatalf("api error %+v", ae)
	}
	if res.Text != "" {
		t.Fatalf("result %+v", res)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests: the SDK retried", n)
	}
}

func TestStreamRateLimitRetryAfter(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Status: 429, Headers: map[string]string{"Retry-After": "7"}})
	_, _, err := collect(t, client(srv, ""), simpleReq)
	var ae *provider.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.RetryAfter != "7" || !ae.Retryable() {
		t.Fatalf("err %v (%+v)", err, ae)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests: the SDK retried", n)
	}
}

// Error bodies that are not OpenAI's shape keep their status and message
// (openai-go alone loses the status on {"error":"..."}).
func TestStreamErrorBodyShapes(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"error":"model \"llama9\" not found, try pulling it first"}`, `model "llama9" not found, try pulling it first`},
		{`{"error":{"message":"bad request","type":"invalid_request_error"}}`, "bad request"},
		{`{"message":"nope"}`, "nope"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{"upstream exploded\n", "upstream exploded"},
		{"", "Not Found"},
	} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			fmt.Fprint(w, tc.body)
		}))
		c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: hs.URL + "/v1"})
		_, err := c.Stream(context.Background(), simpleReq, func(provider.Event) error { return nil })
		hs.Close()
		var ae *provider.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Message != tc.want {
			t.Errorf("body %q: err %v (%+v), want message %q", tc.body, err, ae, tc.want)
		}
	}
}

func TestStreamCancelDuringStall(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "one two three four", StallAfter: 2})
	c := client(srv, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type out struct {
		res *provider.Result
		err error
	}
	done := make(chan out, 1)
	var cancelled time.Time
	var once sync.Once
	go func() {
		res, err := c.Stream(ctx, simpleReq, func(e provider.Event) error {
			if e.Kind == provider.EventText && e.Text == "two " {
				// Cancel once the stream has stalled.
				once.Do(func() {
					time.AfterFunc(100*time.Millisecond, func() { cancelled = time.Now(); cancel() })
				})
			}
			return nil
		})
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", o.err)
		}
		if o.res.Text != "one two " {
			t.Fatalf("partial text %q", o.res.Text)
		}
		t.Logf("returned %v after cancel", time.Since(cancelled))
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not return after cancel")
	}
}

func TestStreamIdleTimeout(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "one two three", StallAfter: 1})
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL(), IdleTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, res, err := collect(t, c, simpleReq)
	if !errors.Is(err, provider.ErrIdleTimeout) {
		t.Fatalf("err %v, want ErrIdleTimeout", err)
	}
	t.Logf("error: %v", err)
	if errors.Is(err, context.Canceled) {
		t.Fatalf("idle timeout must not look like the caller's cancellation: %v", err)
	}
	if res.Text != "one " {
		t.Fatalf("partial text %q", res.Text)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// A slow but steady stream is not idle.
func TestStreamSlowIsNotIdle(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "a b c d e f", DelayMS: 100})
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL(), IdleTimeout: 400 * time.Millisecond})
	_, res, err := collect(t, c, simpleReq)
	if err != nil || res.Text != "a b c d e f" {
		t.Fatalf("err %v, text %q", err, res.Text)
	}
}

func TestStreamOverallTimeout(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "a b c d e f", DelayMS: 100})
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL(), Timeout: 350 * time.Millisecond})
	_, res, err := collect(t, c, simpleReq)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("err %v", err)
	}
	t.Logf("error: %v", err)
	if res.Text == "" || res.Text == "a b c d e f" {
		t.Fatalf("partial text %q", res.Text)
	}
}

func TestStreamCutKeepsPartialText(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "one two three four five", CutAfter: 3})
	_, res, err := collect(t, client(srv, ""), simpleReq)
	if !errors.Is(err, provider.ErrIncompleteStream) {
		t.Fatalf("err %v, want ErrIncompleteStream", err)
	}
	t.Logf("error: %v", err)
	if res.Text != "one two three " {
		t.Fatalf("partial text %q", res.Text)
	}
}

func TestStreamMalformedChunk(t *testing.T) {
	raw := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"` + "\n\n" +
		"data: [DONE]\n\n"
	srv := startFake(t, fakemodel.Reply{RawSSE: raw})
	_, res, err := collect(t, client(srv, ""), simpleReq)
	if !errors.Is(err, provider.ErrMalformedChunk) {
		t.Fatalf("err %v, want ErrMalformedChunk", err)
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "malformed chunk") {
		t.Fatalf("unclear error %q", err)
	}
	if res.Text != "partial" {
		t.Fatalf("partial text %q", res.Text)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	raw := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n" +
		`data: {"error":{"message":"provider overloaded","code":502}}` + "\n\n"
	srv := startFake(t, fakemodel.Reply{RawSSE: raw})
	_, res, err := collect(t, client(srv, ""), simpleReq)
	if !errors.Is(err, provider.ErrIncompleteStream) || !strings.Contains(err.Error(), "provider overloaded") {
		t.Fatalf("err %v", err)
	}
	t.Logf("error: %v", err)
	if res.Text != "hi" {
		t.Fatalf("partial text %q", res.Text)
	}
}

func TestStreamEndsWithoutFinishReason(t *testing.T) {
	raw := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n" +
		"data: [DONE]\n\n"
	srv := startFake(t, fakemodel.Reply{RawSSE: raw})
	_, res, err := collect(t, client(srv, ""), simpleReq)
	if !errors.Is(err, provider.ErrIncompleteStream) || res.Text != "hi" {
		t.Fatalf("err %v, text %q", err, res.Text)
	}
}

// The last argument piece in the finish_reason chunk, then usage, over HTTP.
func TestStreamLastArgumentWithFinish(t *testing.T) {
	raw := `: keep-alive comment` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"ls","arguments":"{\"dir\":"}}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"/tmp\"}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}` + "\n\n" +
		"data: [DONE]\n\n"
	srv := startFake(t, fakemodel.Reply{RawSSE: raw})
	_, res, err := collect(t, client(srv, ""), simpleReq)
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.ToolCall{{ID: "call_x", Name: "ls", Arguments: `{"dir":"/tmp"}`}}
	if !reflect.DeepEqual(res.ToolCalls, want) || res.Usage == nil || res.Usage.TotalTokens != 7 {
		t.Fatalf("result %+v", res)
	}
}

func TestStreamOnEventErrorAbandons(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "a b c d e f g", DelayMS: 20})
	stop := errors.New("enough")
	var n int
	res, err := client(srv, "").Stream(context.Background(), simpleReq, func(e provider.Event) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("err %v, want the callback's error itself", err)
	}
	if res == nil || res.Text != "a b " || n != 2 {
		t.Fatalf("n %d result %+v", n, res)
	}
}

func TestStreamCancelledBeforeStart(t *testing.T) {
	srv := startFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := client(srv, "").Stream(ctx, simpleReq, func(provider.Event) error { return nil })
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("err %v res %v", err, res)
	}
}

func TestStreamConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// The key in the URL path shows up in the transport's error text.
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: "http://" + addr + "/sk-secret-refused/v1", APIKey: "sk-secret-refused"})
	res, err := c.Stream(context.Background(), simpleReq, func(provider.Event) error { return nil })
	var ae *provider.APIError
	if err == nil || errors.As(err, &ae) || res == nil {
		t.Fatalf("err %v", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Fatalf("err %v does not wrap the transport error", err)
	}
	t.Logf("error: %v", err)
	if strings.Contains(err.Error(), "sk-secret-refused") {
		t.Fatalf("error leaks the key: %v", err)
	}
}

func TestStreamAPIKeyNeverInErrors(t *testing.T) {
	const key = "sk-very-secret-123"
	srv := startFake(t, fakemodel.Reply{Status: 401, Text: "Incorrect API key provided: " + key})
	_, _, err := collect(t, client(srv, key), simpleReq)
	var ae *provider.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(fmt.Sprintf("%+v", ae), key) {
		t.Fatalf("error leaks the key: %v", err)
	}
}

func TestStreamConcurrent(t *testing.T) {
	srv := startFake(t)
	srv.SetFallback(fakemodel.Reply{Text: "same answer for all"})
	c := client(srv, "")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			res, err := c.Stream(context.Background(), simpleReq, func(provider.Event) error { return nil })
			if err == nil && res.Text != "same answer for all" {
				err = fmt.Errorf("text %q", res.Text)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The request body as the endpoint sees it.
func TestStreamRequestShape(t *testing.T) {
	srv := startFake(t, fakemodel.Reply{Text: "ok"}, fakemodel.Reply{Text: "ok"})
	req := provider.Request{
		Model: "glm-4.6",
		// Echo: the reasoning goes back as reasoning_content (ReasoningAuto
		// would strip it for a model not known to want it).
		ReasoningHistory: provider.ReasoningEcho,
		MaxTokens:        256,
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Content: "You are crow."},
			{Role: provider.RoleUser, Content: "What is in this picture?", Parts: []provider.ContentPart{
				{Type: "image", MimeType: "image/png", Data: "iVBORw0KGgo="},
			}},
			{Role: provider.RoleAssistant, Content: "", Reasoning: "look first", ToolCalls: []provider.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.png"}`},
				{ID: "call_2", Name: "broken", Arguments: `{"path":`, ArgumentsError: "bad"},
			}},
			{Role: provider.RoleTool, ToolCallID: "call_1", Content: "PNG bytes"},
			{Role: provider.RoleTool, ToolCallID: "call_2", Content: "error: bad arguments"},
			{Role: provider.RoleAssistant, Content: "It is a cat."},
		},
		Tools: []provider.Tool{{
			Name:        "read_file",
			Description: "Read a file.",
			Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"path": map[string]any{"type": "string"}},
				"required":   []any{"path"},
			},
		}},
	}
	if _, _, err := collect(t, client(srv, ""), req); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(srv.Requests()[0], &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model":          "glm-4.6",
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"max_tokens":     float64(256),
		"messages": []any{
			map[string]any{"role": "system", "content": "You are crow."},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is in this picture?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}},
			}},
			map[string]any{"role": "assistant", "reasoning_content": "look first", "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"a.png"}`}},
				map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "broken", "arguments": `{}`}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "PNG bytes"},
			map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "error: bad arguments"},
			map[string]any{"role": "assistant", "content": "It is a cat."},
		},
		"tools": []any{map[string]any{
			"type": "function",
			"function": map[string]any{
				"name":        "read_file",
				"description": "Read a file.",
				"parameters": map[string]any{
					"type":       "object",
					"properties": map[string]any{"path": map[string]any{"type": "string"}},
					"required":   []any{"path"},
				},
			},
		}},
	}
	if !reflect.DeepEqual(body, want) {
		got, _ := json.MarshalIndent(body, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("request body\n got %s\nwant %s", got, exp)
	}

	// No MaxTokens, no tools: neither field is sent.
	if _, _, err := collect(t, client(srv, ""), simpleReq); err != nil {
		t.Fatal(err)
	}
	body = nil
	if err := json.Unmarshal(srv.Requests()[1], &body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"max_tokens", "tools"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent: %s", k, srv.Requests()[1])
		}
	}
}

func TestStreamRejectsBadMessages(t *testing.T) {
	srv := startFake(t)
	for _, m := range []provider.Message{
		{Role: "wizard", Content: "x"},
		{Role: provider.RoleTool, Content: "no id"},
		{Role: provider.RoleUser, Parts: []provider.ContentPart{{Type: "image"}}},
	} {
		res, err := client(srv, "").Stream(context.Background(), provider.Request{Model: "m", Messages: []provider.Message{m}}, func(provider.Event) error { return nil })
		if err == nil || res == nil {
			t.Errorf("message %+v accepted", m)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestStreamAuthorization(t *testing.T) {
	srv := startFake(t)
	if _, _, err := collect(t, client(srv, "sk-configured"), simpleReq); err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(t, client(srv, ""), simpleReq); err != nil {
		t.Fatal(err)
	}
	h := srv.Headers()
	if got := h[0].Get("Authorization"); got != "Bearer sk-configured" {
		t.Fatalf("with key: Authorization %q", got)
	}
	if got, ok := h[1]["Authorization"]; ok {
		t.Fatalf("without key: Authorization sent: %q", got)
	}
}

func TestStreamCustomHeaders(t *testing.T) {
	srv := startFake(t)
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL(), Headers: map[string]string{"HTTP-Referer": "https://crow.example", "X-Title": "crow"}})
	if _, _, err := collect(t, c, simpleReq); err != nil {
		t.Fatal(err)
	}
	h := srv.Headers()[0]
	if h.Get("HTTP-Referer") != "https://crow.example" || h.Get("X-Title") != "crow" {
		t.Fatalf("headers %v", h)
	}
}

// openai.NewClient reads these; the configuration must win.
func TestStreamIgnoresEnvironment(t *testing.T) {
	bogus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request went to OPENAI_BASE_URL: %s %s", r.Method, r.URL)
		w.WriteHeader(500)
	}))
	defer bogus.Close()
	t.Setenv("OPENAI_BASE_URL", bogus.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes")

	srv := startFake(t)
	for _, key := range []string{"", "sk-from-cfg"} {
		if _, _, err := collect(t, client(srv, key), simpleReq); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
	}
	h := srv.Headers()
	if len(h) != 2 {
		t.Fatalf("%d requests reached the configured server", len(h))
	}
	if got, ok := h[0]["Authorization"]; ok {
		t.Errorf("empty key: Authorization %q sent", got)
	}
	if got := h[1].Get("Authorization"); got != "Bearer sk-from-cfg" {
		t.Errorf("Authorization %q, want the configured key", got)
	}
	for _, hh := range h {
		for _, k := range []string{"OpenAI-Organization", "OpenAI-Project", "X-From-Env"} {
			if v := hh.Get(k); v != "" {
				t.Errorf("%s: %q picked up from the environment", k, v)
			}
		}
	}
}

// finish_reason "error" with no error object (OpenRouter's documented
// mid-stream failure drops it in some proxies) still fails the stream.
func TestStreamFinishReasonError(t *testing.T) {
	raw := `: OPENROUTER PROCESSING` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	srv := startFake(t, fakemodel.Reply{RawSSE: raw})
	_, res, err := collect(t, client(srv, ""), simpleReq)
	if !errors.Is(err, provider.ErrIncompleteStream) || res.Text != "hi" {
		t.Fatalf("err %v, text %q", err, res.Text)
	}
}

// Issue 13 case 6: a key (or any configured header value, or a password in
// the base URL) echoed in the Retry-After header or the error body never
// reaches the error, whose fields end up in error.data.
func TestStreamSecretsNeverInRetryAfter(t *testing.T) {
	const key, hdr = "sk-retry-secret-456", "xauth-header-secret-789"
	srv := startFake(t,
		fakemodel.Reply{Status: 429, Text: "slow down " + hdr, Headers: map[string]string{"Retry-After": key}},
		fakemodel.Reply{Status: 503, Text: "x", Headers: map[string]string{"Retry-After": "2 " + hdr}})
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL(), APIKey: key, Headers: map[string]string{"X-Auth": hdr}})
	for range 2 {
		_, _, err := collect(t, c, simpleReq)
		var ae *provider.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("err %v", err)
		}
		if all := fmt.Sprintf("%v %+v", err, ae); strings.Contains(all, key) || strings.Contains(all, hdr) {
			t.Fatalf("the error carries a secret: %s", all)
		}
	}
}
