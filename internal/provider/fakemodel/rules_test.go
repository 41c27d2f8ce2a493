package fakemodel

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func postRule(t *testing.T, s *Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRulesAnswerWithTheProviderBody(t *testing.T) {
	const toolTurn = `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"call_abc_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_abc_1","content":"r"}]`
	for _, tc := range []struct {
		rule, body, want string
	}{
		{"deepseek-v4-thinking", `{"model":"m","messages":` + toolTurn + `}`,
			`{"error":{"code":"invalid_request_error","message":"The ` + "`reasoning_content`" + ` in the thinking mode must be passed back to the API.","param":null,"type":"invalid_request_error"}}`},
		{"deepseek-reasoning-field", `{"model":"m","messages":` + toolTurn + `}`,
			"Missing `reasoning_content` field in the assistant message at message index 1."},
		{"mistral-tool-call-ids", `{"model":"m","messages":` + toolTurn + `}`,
			`{"code":"3280","message":"Tool call id was call_abc_1 but must be a-z, A-Z, 0-9, with a length of 9.","object":"error","param":null,"type":"invalid_function_call"}`},
		{"openai-max-completion-tokens", `{"model":"m","max_tokens":5,"messages":[]}`,
			`"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."`},
		{"unknown-parameter stream_options", `{"model":"m","stream_options":{"include_usage":true},"messages":[]}`,
			`"Unknown parameter: 'stream_options'."`},
		{"unique-tool-call-ids", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_0","type":"function","function":{"name":"g","arguments":"{}"}}]}]}`,
			"Duplicate value for 'tool_call_id' of call_0 in message[1]"},
		{"deepseek-r1-reasoning-input", `{"model":"m","messages":[{"role":"assistant","content":"a","reasoning_content":"r"}]}`,
			"Please remove the reasoning_content from your message"},
	} {
		rules, err := ParseRules([]byte("# a comment\n\n" + tc.rule + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		s := Start()
		s.SetRules(rules...)
		s.Enqueue(Reply{Text: "scripted"})
		code, body := postRule(t, s, tc.body)
		if code != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: got %d %s, want 400 with %s", tc.rule, code, body, tc.want)
		}
		if s.Pending() != 1 || len(s.Requests()) != 1 {
			t.Errorf("%s: a rejected request must be recorded and take no reply (pending %d, requests %d)", tc.rule, s.Pending(), len(s.Requests()))
		}
		s.Close()
	}
}

func TestRuleForOneModelAndCompliantRequests(t *testing.T) {
	rules, err := ParseRules([]byte("openai-max-completion-tokens model=gpt-5\nmistral-tool-call-ids\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := Start()
	defer s.Close()
	s.SetRules(rules...)
	for _, body := range []string{
		`{"model":"gpt-4o","max_tokens":5,"messages":[]}`,
		`{"model":"gpt-5","max_completion_tokens":5,"messages":[{"role":"assistant","tool_calls":[{"id":"aB3dE6gH9","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"aB3dE6gH9","content":"r"}]}`,
	} {
		if code, got := postRule(t, s, body); code != 200 {
			t.Errorf("%s: got %d %s, want 200", body, code, got)
		}
	}
	if code, _ := postRule(t, s, `{"model":"gpt-5","max_tokens":5,"messages":[]}`); code != 400 {
		t.Errorf("gpt-5 with max_tokens: got %d, want 400", code)
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, text := range []string{"no-such-rule\n", "unknown-parameter\n", "mistral-tool-call-ids extra\n"} {
		if _, err := ParseRules([]byte(text)); err == nil {
			t.Errorf("%q: no error", text)
		}
	}
}

func TestUseSSE(t *testing.T) {
	replies := []Reply{{SSE: "a"}, {Text: "plain"}}
	if err := UseSSE(replies, map[string][]byte{"a": []byte("data: [DONE]\n\n")}); err != nil || replies[0].RawSSE != "data: [DONE]\n\n" {
		t.Fatalf("UseSSE: %v, %q", err, replies[0].RawSSE)
	}
	if err := UseSSE([]Reply{{SSE: "missing"}}, nil); err == nil {
		t.Error("an undefined sse name is not an error")
	}
}

func TestParseDiscovery(t *testing.T) {
	d, rest, err := ParseDiscovery([]byte("unique-tool-call-ids\ndiscovery ollama qwen3:8b 16384 num_ctx\n# note\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *d != (Discovery{Flavor: "ollama", Model: "qwen3:8b", Window: 16384, NumCtx: true, Once: true}) || string(rest) != "unique-tool-call-ids\n# note\n" {
		t.Fatalf("got %+v, rest %q", d, rest)
	}
	if d, rest, err := ParseDiscovery([]byte("unique-tool-call-ids\n")); err != nil || d != nil || string(rest) != "unique-tool-call-ids\n" {
		t.Fatalf("without a discovery line: %+v %q %v", d, rest, err)
	}
	for _, bad := range []string{"discovery vllm m", "discovery tgi m 10", "discovery vllm m -1", "discovery ollama m 10 big",
		"discovery vllm m 10\ndiscovery vllm m 20"} {
		if _, _, err := ParseDiscovery([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A Once discovery tells the window in one answer, then no more.
func TestDiscoveryOnce(t *testing.T) {
	s := Start()
	defer s.Close()
	s.SetDiscovery(Discovery{Flavor: "llama.cpp", Model: "m", Window: 4096, Once: true})
	for i, want := range []int{http.StatusOK, http.StatusNotFound} {
		resp, err := http.Get(strings.TrimSuffix(s.URL(), "/v1") + "/props")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("answer %d: status %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

func TestStrictAlternation(t *testing.T) {
	const tc = `{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}`
	for _, c := range []struct {
		messages string
		ok       bool
	}{
		{`[{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`, true},
		{`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[` + tc + `]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`, true},
		{`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[` + tc + `]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"c"}]`, true},
		{`[{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"user","content":"b"}]`, false},
		{`[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"assistant","content":"c"}]`, false},
		{`[{"role":"system","content":"s"},{"role":"assistant","content":"b"}]`, false},
		{`[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"c1","content":"r"}]`, false},
	} {
		rules, err := ParseRules([]byte("strict-alternation\n"))
		if err != nil {
			t.Fatal(err)
		}
		s := Start()
		s.SetRules(rules...)
		s.Enqueue(Reply{Text: "scripted"})
		code, body := postRule(t, s, `{"model":"m","messages":`+c.messages+`}`)
		s.Close()
		if c.ok && code != 200 {
			t.Errorf("%s: refused (%d %s), want accepted", c.messages, code, body)
		}
		if !c.ok && (code != 500 || body != `{"error":{"code":500,"message":"Conversation roles must alternate user/assistant/user/assistant/...","type":"server_error"}}`) {
			t.Errorf("%s: got %d %s, want llama.cpp's 500", c.messages, code, body)
		}
	}
}
