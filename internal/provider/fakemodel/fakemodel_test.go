package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, replies ...Reply) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	s.Enqueue(replies...)
	return s
}

func post(t *testing.T, ctx context.Context, s *Server, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// events reads an SSE body into its data payloads.
func events(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	blank := true
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			blank = true
			continue
		}
		if !blank {
			t.Fatalf("event without a blank line before it: %q", line)
		}
		blank = false
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not a data line: %q", line)
		}
		out = append(out, data)
	}
	return out, sc.Err()
}

type wireChunk struct {
	ID      *string `json:"id"`
	Object  *string `json:"object"`
	Created *int64  `json:"created"`
	Model   *string `json:"model"`
	Choices *[]struct {
		Index        *int            `json:"index"`
		Delta        *map[string]any `json:"delta"`
		FinishReason json.RawMessage `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

func TestStreamWireFormat(t *testing.T) {
	s := start(t, Reply{Reasoning: "hmm ok", Text: "Hi there", ToolCalls: []ToolCall{{ID: "call_1", Name: "ls", Arguments: `{"path":"."}`}}})
	resp := post(t, context.Background(), s, `{"model":"m1","stream":true,"messages":[]}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.StatusCode != 200 {
		t.Fatalf("status %d content type %q", resp.StatusCode, ct)
	}
	data, err := events(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("last event %q", data[len(data)-1])
	}
	data = data[:len(data)-1]
	var reasoning, text, args strings.Builder
	var finishes []string
	for i, d := range data {
		var c wireChunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if c.ID == nil || c.Object == nil || *c.Object != "chat.completion.chunk" || c.Created == nil || c.Model == nil || *c.Model != "m1" || c.Choices == nil {
			t.Fatalf("chunk %d lacks a field: %s", i, d)
		}
		if i == len(data)-1 { // usage chunk
			if len(*c.Choices) != 0 || !bytes.Contains(c.Usage, []byte(`"total_tokens"`)) {
				t.Fatalf("usage chunk %s", d)
			}
			continue
		}
		if len(*c.Choices) != 1 || string(c.Usage) != "null" {
			t.Fatalf("chunk %d: %s", i, d)
		}
		ch := (*c.Choices)[0]
		if ch.Index == nil || *ch.Index != 0 || ch.Delta == nil || ch.FinishReason == nil {
			t.Fatalf("choice of chunk %d: %s", i, d)
		}
		delta := *ch.Delta
		if (i == 0) != (delta["role"] == "assistant") {
			t.Fatalf("role in chunk %d: %s", i, d)
		}
		if r, ok := delta["reasoning_content"].(string); ok {
			reasoning.WriteString(r)
		}
		if c, ok := delta["content"].(string); ok {
			text.WriteString(c)
		}
		if tcs, ok := delta["tool_calls"].([]any); ok {
			tc := tcs[0].(map[string]any)
			fn := tc["function"].(map[string]any)
			if _, hasID := tc["id"]; hasID != (fn["name"] != nil) {
				t.Fatalf("id and name must come together in the first delta: %s", d)
			}
			args.WriteString(fn["arguments"].(string))
		}
		if string(ch.FinishReason) != "null" {
			finishes = append(finishes, string(ch.FinishReason))
		}
	}
	if reasoning.String() != "hmm ok" || text.String() != "Hi there" || args.String() != `{"path":"."}` {
		t.Fatalf("reasoning %q text %q args %q", reasoning.String(), text.String(), args.String())
	}
	if !reflect.DeepEqual(finishes, []string{`"tool_calls"`}) {
		t.Fatalf("finish reasons %v", finishes)
	}
	// Reasoning first (2 words), text (2 words), tool call: 1 + 3 argument pieces.
	if len(data) != 2+2+4+1+1 {
		t.Fatalf("%d chunks", len(data))
	}
}

func TestFIFOFallbackAndRecording(t *testing.T) {
	s := start(t, Reply{Text: "first"}, Reply{Text: "second"})
	s.SetFallback(Reply{Text: "fallback"})
	bodies := []string{`{"model":"a", "stream":false}`, `{"model":"b","stream":false}`, `{"model":"c","stream":false,"x":[1, 2]}`}
	var got []string
	for _, b := range bodies {
		resp := post(t, context.Background(), s, b)
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage Usage `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c.Object != "chat.completion" || c.Choices[0].FinishReason != "stop" || c.Usage.TotalTokens == 0 {
			t.Fatalf("completion %+v", c)
		}
		got = append(got, c.Choices[0].Message.Content)
	}
	if !reflect.DeepEqual(got, []string{"first", "second", "fallback"}) {
		t.Fatalf("replies %q", got)
	}
	reqs := s.Requests()
	for i, b := range bodies {
		if string(reqs[i]) != b {
			t.Fatalf("request %d recorded as %q, want the exact bytes %q", i, reqs[i], b)
		}
	}
	if h := s.Headers(); len(h) != 3 || h[0].Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", h)
	}
	if s.Pending() != 0 {
		t.Fatalf("pending %d", s.Pending())
	}
}

func TestErrorReply(t *testing.T) {
	s := start(t, Reply{Status: 429, Headers: map[string]string{"Retry-After": "2"}})
	resp := post(t, context.Background(), s, `{"stream":true}`)
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || body.Error.Message != "Too Many Requests" || body.Error.Type != "rate_limit_error" {
		t.Fatalf("status %d headers %v body %+v", resp.StatusCode, resp.Header, body)
	}
}

func TestBadJSONDoesNotConsumeReply(t *testing.T) {
	s := start(t, Reply{Text: "kept"})
	resp := post(t, context.Background(), s, `{not json`)
	resp.Body.Close()
	if resp.StatusCode != 400 || s.Pending() != 1 || len(s.Requests()) != 1 {
		t.Fatalf("status %d pending %d", resp.StatusCode, s.Pending())
	}
}

func TestModels(t *testing.T) {
	s := start(t)
	resp, err := http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != ModelID || list.Data[0].Object != "model" {
		t.Fatalf("models %+v", list)
	}
	resp2, err := http.Get(s.URL() + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 404 {
		t.Fatalf("unknown route: %d", resp2.StatusCode)
	}
}

func TestStallEndsWhenClientLeaves(t *testing.T) {
	s := start(t, Reply{Text: "a b c", StallAfter: 1})
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, s, `{"stream":true}`)
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first line %q %v", line, err)
	}
	if s.active.Load() != 1 {
		t.Fatalf("handler not running during the stall")
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.active.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("handler still running after the client left")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCloseEndsStall(t *testing.T) {
	s := Start()
	s.Enqueue(Reply{Text: "a b", StallAfter: 1})
	resp := post(t, context.Background(), s, `{"stream":true}`)
	defer resp.Body.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left the stalled stream open")
	}
}

func TestCutAfter(t *testing.T) {
	s := start(t, Reply{Text: "a b c d", CutAfter: 2})
	resp := post(t, context.Background(), s, `{"stream":true}`)
	defer resp.Body.Close()
	data, err := events(t, resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error %v, want unexpected EOF", err)
	}
	if len(data) != 2 {
		t.Fatalf("%d events before the cut", len(data))
	}
}

func TestDelay(t *testing.T) {
	s := start(t, Reply{Text: "a b c", DelayMS: 30})
	start := time.Now()
	resp := post(t, context.Background(), s, `{"stream":true}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// 3 text chunks, finish, usage, [DONE]: 6 pauses.
	if d := time.Since(start); d < 6*30*time.Millisecond {
		t.Fatalf("took %v", d)
	}
}

func TestRawSSE(t *testing.T) {
	raw := "data: {broken\n\n"
	s := start(t, Reply{RawSSE: raw})
	resp := post(t, context.Background(), s, `{"stream":true}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != raw || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("body %q", b)
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                 nil,
		"one":              {"one"},
		"a b  c":           {"a ", "b  ", "c"},
		"  lead\nnext\t ":  {"  lead\n", "next\t "},
		"héllo wörld end ": {"héllo ", "wörld ", "end "},
	} {
		got := splitWords(in)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("splitWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitN(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"abcdefg", 3, []string{"abc", "de", "fg"}},
		{"ab", 5, []string{"a", "b"}},
		{"äöü", 2, []string{"äö", "ü"}},
		{"abcd", 1, []string{"abcd"}},
	} {
		if got := splitN(tc.in, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitN(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestParseScript(t *testing.T) {
	script := `
# a comment
{"text":"hello","chunks":2}

  {"status":429,"headers":{"Retry-After":"1"}}
{"tool_calls":[{"id":"c1","name":"ls","arguments":"{}"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}
`
	got, err := ParseScript(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	want := []Reply{
		{Text: "hello", Chunks: 2},
		{Status: 429, Headers: map[string]string{"Retry-After": "1"}},
		{ToolCalls: []ToolCall{{ID: "c1", Name: "ls", Arguments: "{}"}}, Usage: &Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{
		"{\"text\":\"ok\"}\n{\"txet\":\"typo\"}",
		`{"text":`,
		`{"status":42}`,
		`{"text":"a"} {"text":"b"}`,
	} {
		if _, err := ParseScript(strings.NewReader(bad)); err == nil {
			t.Errorf("script %q accepted", bad)
		}
	}
	_, err = ParseScript(strings.NewReader("{}\n{\"txet\":1}"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v should name line 2", err)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:80"} {
		if s, err := Listen(addr); err == nil {
			s.Close()
			t.Errorf("Listen(%q) accepted", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0", "127.0.0.2:0"} {
		if err := CheckLoopback(addr); err != nil {
			t.Errorf("CheckLoopback(%q): %v", addr, err)
		}
	}
	if !strings.HasPrefix(Start().URL(), "http://127.0.0.1:") {
		t.Fatal("Start does not listen on 127.0.0.1")
	}
}
