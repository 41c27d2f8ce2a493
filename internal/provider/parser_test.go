package provider

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// decode turns hand-written chunk JSON into a Chunk, as the SSE stream
// does.
func decode(t testing.TB, js string) Chunk {
	t.Helper()
	c, err := DecodeChunk([]byte(js))
	if err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	return c
}

// feed adds every chunk and returns a copy of all events.
func feed(t testing.TB, p *Parser, chunks ...string) []Event {
	t.Helper()
	var all []Event
	for _, js := range chunks {
		all = append(all, p.Add(decode(t, js))...)
	}
	return all
}

const head = `"id":"c1","object":"chat.completion.chunk","created":1,"model":"m"`

func text(s string) string {
	b, _ := json.Marshal(s)
	return `{` + head + `,"choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}],"usage":null}`
}

func finishChunk(reason string) string {
	return `{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}],"usage":null}`
}

func toolDelta(calls string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[` + calls + `]},"finish_reason":` + fr + `}]}`
}

func kinds(evs []Event) []EventKind {
	out := make([]EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

func TestParserText(t *testing.T) {
	var p Parser
	evs := feed(t, &p,
		`{`+head+`,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
		text("Hel"), text("lo, "), text("wörld"), finishChunk("stop"))
	want := []Event{
		{Kind: EventText, Text: "Hel"},
		{Kind: EventText, Text: "lo, "},
		{Kind: EventText, Text: "wörld"},
		{Kind: EventFinish, FinishReason: FinishStop},
	}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Fatalf("events\n got %+v\nwant %+v", evs, want)
	}
	r := p.Finish()
	if r.Text != "Hello, wörld" || r.FinishReason != FinishStop || r.Usage != nil || r.ToolCalls != nil {
		t.Fatalf("result %+v", r)
	}
}

func TestParserToolCallSplitAcrossChunks(t *testing.T) {
	var p Parser
	evs := feed(t, &p,
		toolDelta(`{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}`, ""),
		toolDelta(`{"index":0,"function":{"arguments":"{\"pa"}}`, ""),
		toolDelta(`{"index":0,"function":{"arguments":"th\": \"a.go\""}}`, ""),
		toolDelta(`{"index":0,"function":{"arguments":"}"}}`, ""),
		finishChunk("tool_calls"))
	if got := kinds(evs); fmt.Sprint(got) != fmt.Sprint([]EventKind{3, 3, 3, 3, 5}) {
		t.Fatalf("kinds %v", got)
	}
	// Each delta event carries the call so far.
	if e := evs[1]; e.ToolCall.ID != "call_a" || e.ToolCall.Name != "read_file" || e.ToolCall.Arguments != `{"pa` || e.ToolIndex != 0 {
		t.Fatalf("second delta %+v", e)
	}
	r := p.Finish()
	want := []ToolCall{{ID: "call_a", Name: "read_file", Arguments: `{"path": "a.go"}`}}
	if fmt.Sprint(r.ToolCalls) != fmt.Sprint(want) || r.FinishReason != FinishToolCalls {
		t.Fatalf("result %+v", r)
	}
}

// openai-go's JustFinishedToolCall misses a call whose last argument piece
// comes with finish_reason; the parser must not.
func TestParserLastPieceWithFinishReason(t *testing.T) {
	var p Parser
	evs := feed(t, &p,
		toolDelta(`{"index":0,"id":"call_a","type":"function","function":{"name":"ls","arguments":"{\"dir\":"}}`, ""),
		toolDelta(`{"index":0,"function":{"arguments":"\".\"}"}}`, "tool_calls"))
	if got := kinds(evs); fmt.Sprint(got) != fmt.Sprint([]EventKind{EventToolCallDelta, EventToolCallDelta, EventFinish}) {
		t.Fatalf("kinds %v", got)
	}
	if evs[1].ToolCall.Arguments != `{"dir":"."}` {
		t.Fatalf("delta before finish %+v", evs[1])
	}
	r := p.Finish()
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"dir":"."}` || r.ToolCalls[0].ArgumentsError != "" {
		t.Fatalf("calls %+v", r.ToolCalls)
	}
}

func TestParserInterleavedCalls(t *testing.T) {
	var p Parser
	feed(t, &p,
		// Index 1 shows up first, then both alternate; two calls in one delta too.
		toolDelta(`{"index":1,"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"q\":"}}`, ""),
		toolDelta(`{"index":0,"id":"call_a","type":"function","function":{"name":"ls","arguments":"{"}}`, ""),
		toolDelta(`{"index":1,"function":{"arguments":"\"x\""}},{"index":0,"function":{"arguments":"\"dir\":\"/\""}}`, ""),
		toolDelta(`{"index":0,"function":{"arguments":"}"}}`, ""),
		toolDelta(`{"index":1,"function":{"arguments":"}"}}`, "tool_calls"))
	r := p.Finish()
	want := []ToolCall{
		{ID: "call_a", Name: "ls", Arguments: `{"dir":"/"}`},
		{ID: "call_b", Name: "grep", Arguments: `{"q":"x"}`},
	}
	if fmt.Sprint(r.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("calls\n got %+v\nwant %+v", r.ToolCalls, want)
	}
}

// Some servers number every call 0 and tell them apart by id only.
func TestParserReusedIndexWithNewID(t *testing.T) {
	var p Parser
	evs := feed(t, &p,
		toolDelta(`{"index":0,"id":"call_a","function":{"name":"ls","arguments":"{}"}}`, ""),
		toolDelta(`{"index":0,"id":"call_b","function":{"name":"pwd","arguments":"{"}}`, ""),
		toolDelta(`{"index":0,"function":{"arguments":"}"}}`, "tool_calls"))
	if evs[1].ToolIndex != 1 || evs[2].ToolIndex != 1 {
		t.Fatalf("indexes %d %d, want 1 1", evs[1].ToolIndex, evs[2].ToolIndex)
	}
	r := p.Finish()
	want := []ToolCall{{ID: "call_a", Name: "ls", Arguments: `{}`}, {ID: "call_b", Name: "pwd", Arguments: `{}`}}
	if fmt.Sprint(r.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("calls %+v", r.ToolCalls)
	}
}

func TestParserMissingIDs(t *testing.T) {
	idRE := regexp.MustCompile(`^call_(\d+)_[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 3 {
		var p Parser
		feed(t, &p,
			toolDelta(`{"index":0,"type":"function","function":{"name":"ls","arguments":"{}"}}`, ""),
			toolDelta(`{"index":1,"function":{"name":"pwd"}}`, "tool_calls"))
		r := p.Finish()
		if len(r.ToolCalls) != 2 {
			t.Fatalf("calls %+v", r.ToolCalls)
		}
		for i, c := range r.ToolCalls {
			m := idRE.FindStringSubmatch(c.ID)
			if m == nil || m[1] != fmt.Sprint(i) {
				t.Fatalf("call %d id %q", i, c.ID)
			}
			if seen[c.ID] {
				t.Fatalf("id %q made twice", c.ID)
			}
			seen[c.ID] = true
		}
		// Finish again: same ids.
		if again := p.Finish(); again.ToolCalls[0].ID != r.ToolCalls[0].ID {
			t.Fatalf("ids changed between Finish calls")
		}
		if r.ToolCalls[1].Arguments != "{}" || r.ToolCalls[1].ArgumentsError != "" {
			t.Fatalf("empty arguments: %+v", r.ToolCalls[1])
		}
	}
}

func TestParserArguments(t *testing.T) {
	for _, tc := range []struct {
		args, want string
		bad        bool
	}{
		{"", "{}", false},
		{"  \n", "{}", false},
		{` {"a":1} `, `{"a":1}`, false},
		{`{"a":`, `{"a":`, true},
		{`[1,2]`, `[1,2]`, true},
		{`"str"`, `"str"`, true},
		{`{"a":1}{"a":1}`, `{"a":1}{"a":1}`, true},
		{`null`, `null`, true},
	} {
		var p Parser
		b, _ := json.Marshal(tc.args)
		feed(t, &p, toolDelta(`{"index":0,"id":"x","function":{"name":"f","arguments":`+string(b)+`}}`, "tool_calls"))
		r := p.Finish()
		if len(r.ToolCalls) != 1 {
			t.Fatalf("%q: call dropped: %+v", tc.args, r.ToolCalls)
		}
		c := r.ToolCalls[0]
		if c.Arguments != tc.want || (c.ArgumentsError != "") != tc.bad {
			t.Errorf("%q: got args %q error %q", tc.args, c.Arguments, c.ArgumentsError)
		}
	}
}

func TestParserReasoning(t *testing.T) {
	var p Parser
	evs := feed(t, &p,
		`{`+head+`,"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Let me \"think\"\n"},"finish_reason":null}]}`,
		`{`+head+`,"choices":[{"index":0,"delta":{"reasoning":"then more. "},"finish_reason":null}]}`,
		// Both fields with the same text: counted once.
		`{`+head+`,"choices":[{"index":0,"delta":{"reasoning_content":"Done.","reasoning":"Done."},"finish_reason":null}]}`,
		// null and non-string reasoning fields are ignored.
		`{`+head+`,"choices":[{"index":0,"delta":{"content":"Answer","reasoning_content":null,"reasoning":null,"reasoning_details":[{"type":"x"}]},"finish_reason":null}]}`,
		finishChunk("stop"))
	want := []Event{
		{Kind: EventReasoning, Text: "Let me \"think\"\n"},
		{Kind: EventReasoning, Text: "then more. "},
		{Kind: EventReasoning, Text: "Done."},
		{Kind: EventText, Text: "Answer"},
		{Kind: EventFinish, FinishReason: FinishStop},
	}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Fatalf("events\n got %+v\nwant %+v", evs, want)
	}
	r := p.Finish()
	if r.Reasoning != "Let me \"think\"\nthen more. Done." || r.Text != "Answer" {
		t.Fatalf("result %+v", r)
	}
}

func TestParserUsage(t *testing.T) {
	var p Parser
	evs := feed(t, &p,
		text("hi"),
		finishChunk("length"),
		`{`+head+`,"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":3}}}`)
	if got := kinds(evs); fmt.Sprint(got) != fmt.Sprint([]EventKind{EventText, EventFinish, EventUsage}) {
		t.Fatalf("kinds %v", got)
	}
	want := Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18, CachedTokens: 3}
	if evs[2].Usage != want {
		t.Fatalf("usage event %+v", evs[2])
	}
	r := p.Finish()
	if r.Usage == nil || *r.Usage != want || r.FinishReason != FinishLength {
		t.Fatalf("result %+v", r)
	}
	// A missing total is derived.
	var q Parser
	feed(t, &q, `{`+head+`,"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}}`)
	if u := q.Finish().Usage; u == nil || u.TotalTokens != 5 {
		t.Fatalf("derived total: %+v", u)
	}
}

func TestParserEventOrderInOneChunk(t *testing.T) {
	var p Parser
	evs := feed(t, &p, `{`+head+`,"choices":[{"index":0,"delta":{"reasoning_content":"r","content":"c","tool_calls":[{"index":0,"id":"i","function":{"name":"n","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	want := []EventKind{EventReasoning, EventText, EventToolCallDelta, EventFinish, EventUsage}
	if got := kinds(evs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
}

func TestParserIgnoresOtherChoices(t *testing.T) {
	var p Parser
	feed(t, &p, `{`+head+`,"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"stop"},{"index":0,"delta":{"content":"mine"},"finish_reason":null}]}`)
	if r := p.Finish(); r.Text != "mine" || r.FinishReason != "" {
		t.Fatalf("result %+v", r)
	}
}

// Events handed out earlier keep their values while the parser goes on.
func TestParserEventsStayValid(t *testing.T) {
	var p Parser
	first := append([]Event(nil), p.Add(decode(t, toolDelta(`{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}`, "")))...)
	for i := range 50 {
		p.Add(decode(t, toolDelta(`{"index":0,"function":{"arguments":"`+strings.Repeat("1", i)+`"}}`, "")))
	}
	if first[0].ToolCall.Arguments != `{"x":` {
		t.Fatalf("earlier event changed: %q", first[0].ToolCall.Arguments)
	}
}

// thinkStream feeds content deltas and a final finish_reason chunk, and
// returns the reasoning and text the events carried.
func thinkStream(t *testing.T, pieces ...string) (reasoning, text string) {
	t.Helper()
	return thinkStreamIn(t, false, pieces...)
}

// thinkStreamIn is thinkStream for a reply that starts inside a <think>
// block the prompt opened when opened is set.
func thinkStreamIn(t *testing.T, opened bool, pieces ...string) (reasoning, text string) {
	t.Helper()
	var p Parser
	if opened {
		p.startInThink()
	}
	var r, x strings.Builder
	collect := func(evs []Event) {
		for _, ev := range evs {
			switch ev.Kind {
			case EventReasoning:
				r.WriteString(ev.Text)
			case EventText:
				x.WriteString(ev.Text)
			}
		}
	}
	for _, s := range pieces {
		collect(p.Add(Chunk{Choices: []ChunkChoice{{Delta: ChunkDelta{Content: s}}}}))
	}
	collect(p.Add(Chunk{Choices: []ChunkChoice{{FinishReason: "stop"}}}))
	res := p.Finish()
	if res.Reasoning != r.String() || res.Text != x.String() {
		t.Fatalf("Result (%q, %q) differs from the events (%q, %q)", res.Reasoning, res.Text, r.String(), x.String())
	}
	return r.String(), x.String()
}

func TestThinkTagsInContent(t *testing.T) {
	for _, tc := range []struct {
		name            string
		pieces          []string
		reasoning, text string
	}{
		{"qwen3 whole", []string{"<think>\nplan it\n</think>\n\nThe answer."}, "\nplan it\n", "The answer."},
		{"tags split at every byte", strings.Split("<think>ab</think>cd", ""), "ab", "cd"},
		{"leading whitespace", []string{"\n\n", "<th", "ink>", "x</th", "ink>", "\n", "y"}, "x", "y"},
		{"a lookalike closing tag", []string{"<think>a</thin", "g></think>b"}, "a</thing>", "b"},
		{"no think", []string{"plain ", "<think>later</think> stays"}, "", "plain <think>later</think> stays"},
		{"unterminated", []string{"<think>still thinking </thi"}, "still thinking </thi", ""},
		{"only a tag prefix", []string{"<th"}, "", "<th"},
		{"empty think", []string{"<think></think>", "answer"}, "", "answer"},
	} {
		r, x := thinkStream(t, tc.pieces...)
		if r != tc.reasoning || x != tc.text {
			t.Errorf("%s: reasoning %q text %q, want %q and %q", tc.name, r, x, tc.reasoning, tc.text)
		}
	}
}

// A chat template that writes "<think>\n" into the prompt (QwQ, R1
// distills, Qwen3 Thinking-2507) leaves the reply with a bare </think>.
func TestThinkOpenedByPrompt(t *testing.T) {
	for _, tc := range []struct {
		name            string
		pieces          []string
		reasoning, text string
	}{
		{"r1 distill", []string{"\nOkay, 2+2.\n</think>\n\n4"}, "Okay, 2+2.\n", "4"},
		{"close split at every byte", strings.Split("ab</think>cd", ""), "ab", "cd"},
		{"empty reasoning", []string{"</think>", "answer"}, "", "answer"},
		{"the template's tag kept anyway", []string{"<think>x</think>y"}, "x", "y"},
		{"a later </think> is text", []string{"a</think>b</think>c"}, "a", "b</think>c"},
		{"never closed (cut by max_tokens)", []string{"still thinking </thi"}, "still thinking </thi", ""},
		{"only whitespace", []string{"\n", " "}, "", ""},
	} {
		r, x := thinkStreamIn(t, true, tc.pieces...)
		if r != tc.reasoning || x != tc.text {
			t.Errorf("%s: reasoning %q text %q, want %q and %q", tc.name, r, x, tc.reasoning, tc.text)
		}
	}
	// Without the setting a bare </think> is answer text: an answer that
	// quotes the tag is never hidden.
	if r, x := thinkStream(t, "Close it with ", "</think>", " and go on."); r != "" || x != "Close it with </think> and go on." {
		t.Errorf("unconfigured: reasoning %q text %q", r, x)
	}
}

// A server with a reasoning parser sends the reasoning in a field before
// any content: the content is then the answer, even a </think> in it.
func TestThinkOpenedButServerParses(t *testing.T) {
	var p Parser
	p.startInThink()
	p.Add(Chunk{Choices: []ChunkChoice{{Delta: ChunkDelta{Content: ""}}}})
	p.Add(Chunk{Choices: []ChunkChoice{{Delta: ChunkDelta{ReasoningContent: "plan"}}}})
	p.Add(Chunk{Choices: []ChunkChoice{{Delta: ChunkDelta{Content: "use </think> here"}}}})
	p.Add(Chunk{Choices: []ChunkChoice{{FinishReason: "stop"}}})
	if r := p.Finish(); r.Reasoning != "plan" || r.Text != "use </think> here" {
		t.Fatalf("reasoning %q text %q", r.Reasoning, r.Text)
	}
}

func TestInlineThinkByName(t *testing.T) {
	for model, want := range map[string]InlineThink{
		"Qwen/QwQ-32B": InlineThinkOpen, "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": InlineThinkOpen,
		"qwen3-235b-a22b-thinking-2507": InlineThinkOpen, "Qwen/Qwen3-32B": InlineThinkTag,
		"deepseek-reasoner": InlineThinkTag, "gpt-5": InlineThinkTag, "qwen3-235b-a22b-instruct-2507": InlineThinkTag,
	} {
		if got := inlineThinkFor(model, InlineThinkAuto); got != want {
			t.Errorf("%s: %q, want %q", model, got, want)
		}
	}
	if got := inlineThinkFor("Qwen/QwQ-32B", InlineThinkTag); got != InlineThinkTag {
		t.Errorf("configured tag overridden: %q", got)
	}
}

func TestReasoningFieldVariants(t *testing.T) {
	for _, tc := range []struct{ name, chunk, want string }{
		{"reasoning_content", `{"choices":[{"index":0,"delta":{"reasoning_content":"r1"}}]}`, "r1"},
		{"reasoning", `{"choices":[{"index":0,"delta":{"reasoning":"r2"}}]}`, "r2"},
		{"reasoning_details text", `{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.text","text":"r3","format":"anthropic-claude-v1","index":0}]}}]}`, "r3"},
		{"reasoning_details summary and encrypted", `{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"eyJ"},{"type":"reasoning.summary","summary":"r4"}]}}]}`, "r4"},
		{"openrouter sends both", `{"choices":[{"index":0,"delta":{"reasoning":"r5","reasoning_details":[{"type":"reasoning.text","text":"r5"}]}}]}`, "r5"},
	} {
		c, err := DecodeChunk([]byte(tc.chunk))
		if err != nil {
			t.Fatal(err)
		}
		var p Parser
		p.Add(c)
		if res := p.Finish(); res.Reasoning != tc.want || res.Text != "" {
			t.Errorf("%s: reasoning %q text %q, want reasoning %q", tc.name, res.Reasoning, res.Text, tc.want)
		}
	}
}

func TestUsageInXGroq(t *testing.T) {
	c, err := DecodeChunk([]byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"x_groq":{"id":"req_01","usage":{"queue_time":0.07,"prompt_tokens":23,"prompt_time":0.006,"completion_tokens":19,"completion_time":0.022,"total_tokens":42,"total_time":0.028}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Usage == nil || c.Usage.PromptTokens != 23 || c.Usage.CompletionTokens != 19 || c.Usage.TotalTokens != 42 {
		t.Fatalf("usage %+v, want 23/19/42 from x_groq", c.Usage)
	}
	c, _ = DecodeChunk([]byte(`{"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"x_groq":{"usage":{"prompt_tokens":9}}}`))
	if c.Usage.PromptTokens != 1 {
		t.Errorf("x_groq overrode the standard usage: %+v", c.Usage)
	}
}

func TestUsageInsideTheChoice(t *testing.T) {
	// Moonshot (Kimi): usage in choices[0].usage of the last chunk.
	c, err := DecodeChunk([]byte(`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop","usage":{"prompt_tokens":8,"completion_tokens":3,"total_tokens":11}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Usage == nil || c.Usage.TotalTokens != 11 {
		t.Fatalf("usage %+v, want 11 from choices[0].usage", c.Usage)
	}
}

// The remembered thought signatures are bounded: the oldest go first.
func TestThoughtSignaturesBounded(t *testing.T) {
	var s thoughtSignatures
	for i := range maxThoughtSignatures + 1 {
		s.remember([]ToolCall{{ID: fmt.Sprint("call-", i), ThoughtSignature: "sig"}})
	}
	if len(s.byID) != maxThoughtSignatures || len(s.order) != maxThoughtSignatures {
		t.Fatalf("%d remembered", len(s.byID))
	}
	if _, ok := s.byID["call-0"]; ok {
		t.Fatal("the oldest signature is still remembered")
	}
	if s.byID[fmt.Sprint("call-", maxThoughtSignatures)] != "sig" {
		t.Fatal("the newest signature is missing")
	}
}

// Cached prompt tokens as DeepSeek reports them, reasoning tokens as
// OpenAI does, and counts that cannot be true (more cached than sent).
func TestParserUsageDetails(t *testing.T) {
	for _, c := range []struct {
		usage string
		want  Usage
	}{
		{`{"prompt_tokens":100,"completion_tokens":20,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}`,
			Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120, CachedTokens: 64}},
		{`{"prompt_tokens":100,"completion_tokens":20,"completion_tokens_details":{"reasoning_tokens":15}}`,
			Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120, ReasoningTokens: 15}},
		{`{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":999},"completion_tokens_details":{"reasoning_tokens":"x"}}`,
			Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, CachedTokens: 10}},
	} {
		var p Parser
		feed(t, &p, text("hi"), finishChunk("stop"), `{`+head+`,"choices":[],"usage":`+c.usage+`}`)
		if r := p.Finish(); r.Usage == nil || *r.Usage != c.want {
			t.Errorf("%s: usage %+v, want %+v", c.usage, r.Usage, c.want)
		}
	}
}
