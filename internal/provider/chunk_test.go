package provider

import (
	"testing"
)

// Servers differ in what they put in a chunk; one odd field must not lose
// the chunk, and what can be read is read.
func TestDecodeChunkLenient(t *testing.T) {
	cases := []struct {
		name, in string
		want     Result
		wantKind []EventKind
	}{
		{"null content", `{"choices":[{"index":0,"delta":{"content":null,"role":"assistant"}}]}`,
			Result{}, nil},
		{"number where text belongs", `{"choices":[{"index":0,"delta":{"content":42}}]}`,
			Result{}, nil},
		{"escapes and non-ASCII", `{"choices":[{"index":0,"delta":{"content":"a\"b\\n\u00e9 ü"}}]}`,
			Result{Text: "a\"b\\n\u00e9 ü"}, []EventKind{EventText}},
		{"invalid UTF-8 is replaced", "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\xffb\"}}]}",
			Result{Text: "a\uFFFDb"}, []EventKind{EventText}},
		{"reasoning_content wins over reasoning", `{"choices":[{"index":0,"delta":{"reasoning_content":"r1","reasoning":"r1"}}]}`,
			Result{Reasoning: "r1"}, []EventKind{EventReasoning}},
		{"reasoning object is not text", `{"choices":[{"index":0,"delta":{"reasoning":{"effort":"high"}}}]}`,
			Result{}, nil},
		{"float token counts", `{"choices":[],"usage":{"prompt_tokens":12.0,"completion_tokens":3,"total_tokens":null}}`,
			Result{Usage: &Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15}}, []EventKind{EventUsage}},
		{"finish reason null", `{"choices":[{"index":0,"delta":{},"finish_reason":null}]}`,
			Result{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeChunk([]byte(tc.in))
			if err != nil {
				t.Fatalf("DecodeChunk: %v", err)
			}
			var p Parser
			evs := p.Add(c)
			if got := kinds(evs); len(got) != len(tc.wantKind) || (len(got) > 0 && got[0] != tc.wantKind[0]) {
				t.Errorf("events %v, want %v", got, tc.wantKind)
			}
			r := p.Finish()
			if r.Text != tc.want.Text || r.Reasoning != tc.want.Reasoning {
				t.Errorf("text %q reasoning %q, want %q %q", r.Text, r.Reasoning, tc.want.Text, tc.want.Reasoning)
			}
			if (r.Usage == nil) != (tc.want.Usage == nil) || (r.Usage != nil && *r.Usage != *tc.want.Usage) {
				t.Errorf("usage %+v, want %+v", r.Usage, tc.want.Usage)
			}
		})
	}
}

// Some servers send a tool call's arguments as the JSON object itself
// instead of a string holding it; the call keeps its JSON text.
func TestDecodeChunkObjectArguments(t *testing.T) {
	var p Parser
	for _, js := range []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read_file","arguments":{"path":"a.go"}}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	} {
		p.Add(decode(t, js))
	}
	r := p.Finish()
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"path":"a.go"}` || r.ToolCalls[0].ArgumentsError != "" {
		t.Fatalf("tool calls %+v", r.ToolCalls)
	}
}

func TestDecodeChunkError(t *testing.T) {
	for in, want := range map[string]bool{
		`{"error":{"message":"overloaded"}}`:                    true,
		`{"error":"overloaded"}`:                                true,
		`{"error":null,"choices":[]}`:                           false,
		`{"choices":[{"index":0,"delta":{"content":"error"}}]}`: false,
	} {
		c, err := DecodeChunk([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := len(c.Error) > 0; got != want {
			t.Errorf("%s: error set %v, want %v", in, got, want)
		}
	}
	for _, in := range []string{`42`, `[]`, `{"choices":{}}`, `{"choices":[{"index":"0"}]}`, `{`} {
		if _, err := DecodeChunk([]byte(in)); err == nil {
			t.Errorf("%s: decoded, want an error", in)
		}
	}
}
