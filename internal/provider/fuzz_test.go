package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzParser feeds arbitrary chunks (one JSON document per line, decoded as
// the SDK decodes them; undecodable lines are skipped as the SDK would fail
// on them) and checks what the agent relies on: the Result holds exactly
// what the events carried, every tool call has a unique id, arguments are a
// JSON object or flagged, and the calls can be sent back to a model.
func FuzzParser(f *testing.F) {
	for _, s := range parserSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var p Parser
		var textEv, reasonEv strings.Builder
		for _, line := range bytes.Split(in, []byte("\n")) {
			c, err := DecodeChunk(line)
			if err != nil {
				continue
			}
			for _, ev := range p.Add(c) {
				switch ev.Kind {
				case EventText:
					textEv.WriteString(ev.Text)
				case EventReasoning:
					reasonEv.WriteString(ev.Text)
				}
			}
		}
		res := p.Finish()
		checkResult(t, res, textEv.String(), reasonEv.String())
		again := p.Finish()
		for i := range res.ToolCalls {
			if again.ToolCalls[i].ID != res.ToolCalls[i].ID {
				t.Fatalf("Finish twice changed call ids: %q then %q", res.ToolCalls[i].ID, again.ToolCalls[i].ID)
			}
		}
	})
}

// checkResult checks the invariants of a Result against the text and
// reasoning its events carried.
func checkResult(t *testing.T, res *Result, text, reasoning string) {
	t.Helper()
	if res == nil {
		t.Fatal("nil Result")
	}
	if res.Text != text {
		t.Fatalf("Result.Text %q, events carried %q", res.Text, text)
	}
	if res.Reasoning != reasoning {
		t.Fatalf("Result.Reasoning %q, events carried %q", res.Reasoning, reasoning)
	}
	// Cached and reasoning tokens are parts of the counts they belong to:
	// a cost is never billed on more cached tokens than were sent.
	if u := res.Usage; u != nil && (u.CachedTokens < 0 || u.CachedTokens > u.PromptTokens || u.ReasoningTokens < 0 || u.ReasoningTokens > u.CompletionTokens) {
		t.Fatalf("usage parts out of range: %+v", *u)
	}
	ids := make(map[string]bool)
	for _, c := range res.ToolCalls {
		if c.ID == "" {
			t.Fatalf("tool call without id: %+v", c)
		}
		if ids[c.ID] {
			t.Fatalf("duplicate tool call id %q in %+v", c.ID, res.ToolCalls)
		}
		ids[c.ID] = true
		if c.ArgumentsError == "" {
			var obj map[string]any
			if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil || obj == nil {
				t.Fatalf("arguments %q accepted but not a JSON object", c.Arguments)
			}
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(argumentsForHistory(c.Arguments)), &obj); err != nil || obj == nil {
			t.Fatalf("arguments sent back to the model are not a JSON object: %q", argumentsForHistory(c.Arguments))
		}
	}
	// The reply must be storable and sendable back as history.
	msg := Message{Role: RoleAssistant, Content: res.Text, ToolCalls: res.ToolCalls}
	req := Request{Model: "m", Messages: []Message{msg}}
	body, err := requestBody(req, shapeFor(req))
	if err != nil {
		t.Fatalf("reply cannot be sent back as history: %v", err)
	}
	if !json.Valid(body) {
		t.Fatalf("history does not encode: %s", body)
	}
}

// bodyTransport answers every request with a fixed event-stream body,
// without a network.
type bodyTransport struct{ body []byte }

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(b.body)),
		Request:    r,
	}, nil
}

// FuzzStream runs arbitrary server-sent-event bodies through the whole
// client (SSE decoding, chunk decoding, parser, error classification). It
// never hangs or panics, the Result is never nil, a success has a finish
// reason, and every failure is one of the classified errors with the partial
// result kept.
func FuzzStream(f *testing.F) {
	for _, s := range parserSeeds {
		var body strings.Builder
		for _, line := range strings.Split(s, "\n") {
			body.WriteString("data: " + line + "\n\n")
		}
		f.Add([]byte(body.String()))
		f.Add([]byte(body.String() + "data: [DONE]\n\n"))
	}
	f.Add([]byte("event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n"))
	f.Add([]byte(": keep-alive\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\r\n\r\ndata: {not json}\n\n"))
	// Over the limits below: one event of endless data lines, one long line,
	// a long reply; control bytes and invalid UTF-8 in fields and values.
	f.Add([]byte("data: {\"choices\":[\n" + strings.Repeat("data: xxxxxxxxxxxxxxxx\n", 2000) + "\n"))
	f.Add([]byte("data: " + strings.Repeat("y", 1<<20) + "\n\n"))
	f.Add([]byte(strings.Repeat(`data: {"choices":[{"index":0,"delta":{"content":"`+strings.Repeat("z", 1000)+`"}}]}`+"\n\n", 40)))
	f.Add([]byte("data\x00: \x1b[31m\n\x7fdata:\xff\xfe\n\n:\x07\r\r\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\x0c\xc3\"}}]}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := NewOpenAI(OpenAIConfig{
			BaseURL:     "http://127.0.0.1:1/v1",
			HTTPClient:  &http.Client{Transport: bodyTransport{body}},
			IdleTimeout: 5 * time.Second,
			// Small limits, so that inputs reach them.
			MaxReplyBytes: 16 << 10, MaxArgumentBytes: 16 << 10, MaxEventBytes: 16 << 10,
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var textEv, reasonEv strings.Builder
		res, err := c.Stream(ctx, Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, func(ev Event) error {
			switch ev.Kind {
			case EventText:
				textEv.WriteString(ev.Text)
			case EventReasoning:
				reasonEv.WriteString(ev.Text)
			}
			return nil
		})
		if ctx.Err() != nil {
			t.Fatalf("stream did not end on its own: %v", err)
		}
		checkResult(t, res, textEv.String(), reasonEv.String())
		switch {
		case err == nil:
			if res.FinishReason == "" {
				t.Fatal("success without a finish reason")
			}
		case errors.Is(err, ErrMalformedChunk), errors.Is(err, ErrIncompleteStream), errors.Is(err, ErrLimit):
		default:
			t.Fatalf("unclassified error %T: %v", err, err)
		}
	})
}

const fuzzHead = `"id":"c","object":"chat.completion.chunk","created":1,"model":"m"`

var parserSeeds = []string{
	// Usage details: OpenAI's, DeepSeek's, duplicated, out of range, of
	// the wrong type, with control characters and invalid UTF-8 in keys.
	`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":3}}}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_cache_hit_tokens":99,"prompt_tokens_details":{"cached_tokens":"7"},"completion_tokens_details":{"reasoning_tokens":1e300}}}`,
	`{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":{"cached_tokens":-1},"prompt_tokens":2,"\u0000\u001b":1,"` + "\xff\xfe" + `":{"cached_tokens":1}}}`,
	// Gemini 3: a thought signature on the first of two whole calls; odd
	// extra_content values.
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"extra_content":{"google":{"thought_signature":"CpMC\u0000\u001b"}},"function":{"arguments":"{}","name":"a"},"id":"f1","type":"function"},{"extra_content":{"google":{"thought_signature":7}},"function":{"arguments":"{}","name":"b"},"id":"f2","type":"function"}]},"finish_reason":"stop"}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"extra_content":null},{"index":0,"extra_content":"x","id":"f1"}]}}]}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}` + "\n" +
		`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}` + "\n" +
		`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"reasoning":"alt"}}]}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read","arguments":"{\"p"}}]}}]}` + "\n" +
		`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\":1}"}}]},"finish_reason":"tool_calls"}]}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"not json"}},{"index":1,"id":"a","function":{"name":"y","arguments":"[1]"}}]}}]}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"x"}},{"id":"c","function":{"name":"y"}}]}}]}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"x"}},{"index":0,"id":"q","function":{"name":"x"}}]}}]}`,
	`{` + fuzzHead + `,"choices":[{"index":1,"delta":{"content":"other choice"}}]}`,
	`{` + fuzzHead + `,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":0}}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":"content_filter"}]}`,
	`{` + fuzzHead + `,"choices":[{"index":0,"delta":{"content":"\u00e9\ud83d\ude00"},"finish_reason":"length"}]}`,
	`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null},"finish_reason":null}]}`,
	`{"choices":"nope"}`,
}

// FuzzThinkSplit streams content with <think> tags cut at arbitrary bytes
// and checks the split does not depend on where the cuts fall: the same
// reasoning and text as the whole content in one delta, nothing lost or
// duplicated. opened runs it as a reply whose <think> the prompt opened.
func FuzzThinkSplit(f *testing.F) {
	for _, s := range []string{
		"<think>plan</think>answer", "\n<think>\nA\n</think>\n\nB", "<think>a</thin</think>b",
		"no tags <think>x</think>", "<think>unterminated", "<th", "  ", "<think></think>",
		"<think>\x00\x1b\xff\xfe</think>\xc3", strings.Repeat("<think>", 500) + strings.Repeat("</think>", 500),
		"\nOkay.\n</think>\n\nAnswer", "</think>", "</thi", "a</think>b</think>c", "\x00</think>\xff",
		strings.Repeat("x", 1<<16) + "</think>" + strings.Repeat("\xfe", 1<<10),
	} {
		f.Add(s, []byte{1, 3, 5}, false)
		f.Add(s, []byte{2, 7, 1}, true)
	}
	f.Fuzz(func(t *testing.T, content string, cuts []byte, opened bool) {
		wantR, wantX := thinkStreamIn(t, opened, content)
		var pieces []string
		rest := content
		for _, c := range cuts {
			if rest == "" {
				break
			}
			n := int(c) % (len(rest) + 1)
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		pieces = append(pieces, rest)
		r, x := thinkStreamIn(t, opened, pieces...)
		if r != wantR || x != wantX {
			t.Fatalf("cut %q: reasoning %q text %q; whole: %q and %q", pieces, r, x, wantR, wantX)
		}
		if len(r)+len(x) > len(content) {
			t.Fatalf("reasoning %q and text %q are longer than the content %q", r, x, content)
		}
	})
}
