package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// prose returns about n words of varied English text.
func prose(seed, n int) string {
	words := strings.Fields("the parser returns an error when the input is empty and the evaluator divides by zero " +
		"so we add tests for each case keep the public API and wrap every error with the operation name " +
		"then run the suite with the race detector and report which package fails first")
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(seed*7+i*3)%len(words)])
	}
	return b.String()
}

func prompt(a *Agent, sessionID, text string) (*acp.PromptResponse, error) {
	return a.Prompt(context.Background(), &acp.PromptRequest{SessionID: sessionID, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// requestTokens is what the fake model reports as prompt_tokens for a
// request: the provider's count, the truth the agent calibrates with.
func requestTokens(body []byte) int { return len(body) / 4 }

// TestSmallWindowLongSession: 25 turns in a 6,000-token window complete,
// and every request the model receives fits the window minus the reply
// reserve, by the provider's own count. At most one compaction per turn.
func TestSmallWindowLongSession(t *testing.T) {
	const window = 6000
	a, _, m := newTestAgent(t, Config{Model: "local-8b", Models: []request.Model{{Name: "local-8b", ContextWindow: window}}})
	m.SetFallback(fakemodel.Reply{Text: prose(99, 120)})
	ctx := context.Background()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	budget := window - min(request.DefaultOutputReserve, window/4)
	seen := 0
	for turn := 0; turn < 25; turn++ {
		res, err := prompt(a, s.SessionID, fmt.Sprintf("Turn %d. %s", turn, prose(turn, 150+turn*7)))
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if res.StopReason != acp.StopEndTurn {
			t.Fatalf("turn %d: stop reason %s", turn, res.StopReason)
		}
		reqs := m.Requests()
		if n := len(reqs) - seen; n < 1 || n > 2 {
			t.Fatalf("turn %d made %d model requests; want the reply, plus at most one summary", turn, n)
		}
		for i, body := range reqs[seen:] {
			if n := requestTokens(body); n > budget {
				t.Fatalf("turn %d request %d: %d tokens by the provider's count, over the %d-token budget", turn, i, n, budget)
			}
		}
		seen = len(reqs)
	}
	list, err := a.store.Compactions(ctx, s.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("25 long turns in a 6,000-token window never compacted: the test does not exercise compaction")
	}
	t.Logf("%d model requests, %d compactions", seen, len(list))
	// The newest request of the last turn reached the model verbatim.
	last := string(m.Requests()[seen-1])
	if !strings.Contains(last, "Turn 24. ") {
		t.Fatal("the last request lacks the newest prompt")
	}
}

// TestFixedPartIsSmall: the system prompt and the built-in tool schemas,
// counted with both OpenAI vocabularies, stay under 2,500 tokens, so 8k
// local models have room for the conversation.
func TestFixedPartIsSmall(t *testing.T) {
	a, _, _ := newTestAgent(t, Config{Model: "m"})
	s := &persistence.Session{ID: "s", Cwd: "/home/someone/src/github.com/example/a-fairly-long-project-name"}
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		c, err := compaction.NewCounter("", enc)
		if err != nil {
			t.Fatal(err)
		}
		if n := a.build.FixedTokens(&a.sessions.get(s.ID).req, s, c); n > 2500 {
			t.Errorf("%s: system prompt and tool schemas take %d tokens, over 2,500", enc, n)
		} else {
			t.Logf("%s: fixed part %d tokens (%d tools)", enc, n, len(a.turns.toolDefinitions(a.sessions.get(s.ID), s)))
		}
	}
}

func errData(t *testing.T, err error) map[string]any {
	t.Helper()
	var e *acp.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *acp.Error", err)
	}
	d, _ := e.Data.(map[string]any)
	return d
}

// TestAutoCompactionOff: an overflowing request is a clear error naming the
// setting, nothing is compacted, and the oversize request is never sent.
func TestAutoCompactionOff(t *testing.T) {
	st := compaction.Defaults()
	st.Auto = false
	a, _, m := newTestAgent(t, Config{Model: "small", Models: []request.Model{{Name: "small", ContextWindow: 2048}}, Compaction: &st, NoTools: true})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var failed error
	for turn := 0; turn < 20 && failed == nil; turn++ {
		_, failed = prompt(a, s.SessionID, prose(turn, 200))
	}
	if failed == nil {
		t.Fatal("20 long prompts in a 2,048-token window never overflowed")
	}
	if d := errData(t, failed); d["reason"] != "context_window_exceeded" || !strings.Contains(failed.Error(), "automatic compaction is off") {
		t.Fatalf("overflow error = %v (data %v); want context_window_exceeded saying compaction is off", failed, d)
	}
	if list, _ := a.store.Compactions(context.Background(), s.SessionID); len(list) != 0 {
		t.Fatalf("%d compactions with auto-compaction off", len(list))
	}
	for i, body := range m.Requests() {
		if n := requestTokens(body); n > 2048 {
			t.Fatalf("request %d of %d tokens was sent to a 2,048-token model", i, n)
		}
	}
}

// TestBreakerAfterThreeFailures: prompts that cannot fit even after
// compaction fail with a clear error; after three failed compactions the
// agent stops trying (no more summary requests) and says so.
func TestBreakerAfterThreeFailures(t *testing.T) {
	// No tools: their schemas alone would take half of this small window.
	a, _, m := newTestAgent(t, Config{Model: "small", Models: []request.Model{{Name: "small", ContextWindow: 2048}}, NoTools: true})
	m.SetFallback(fakemodel.Reply{Text: "short summary"})
	ctx := context.Background()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "a small first request"); err != nil {
		t.Fatal(err)
	}
	huge := prose(1, 3000) // far over the window on its own
	var errs []error
	for i := 0; i < 4; i++ {
		_, err := prompt(a, s.SessionID, huge)
		if err == nil {
			t.Fatalf("attempt %d: a prompt larger than the window succeeded", i)
		}
		if d := errData(t, err); d["reason"] != "context_window_exceeded" {
			t.Fatalf("attempt %d: %v", i, err)
		}
		errs = append(errs, err)
	}
	if strings.Contains(errs[2].Error(), "stopped after") || !strings.Contains(errs[3].Error(), "stopped after 3 failed attempts") {
		t.Fatalf("breaker: 3rd error %q, 4th error %q; want the 4th (only) to say compaction stopped after 3 failures", errs[2], errs[3])
	}
	before := len(m.Requests())
	if _, err := prompt(a, s.SessionID, huge); err == nil || len(m.Requests()) != before {
		t.Fatalf("with the breaker open the model was called again (%d -> %d requests)", before, len(m.Requests()))
	}
	for i, body := range m.Requests() {
		if n := requestTokens(body); n > 2048 {
			t.Fatalf("request %d of %d tokens was sent to a 2,048-token model", i, n)
		}
	}
}

// TestCompactOnLoad: a session whose stored context is over the window of
// the model it is loaded with is compacted during session/load, without a
// model call, and the next prompt fits.
func TestCompactOnLoad(t *testing.T) {
	ctx := context.Background()
	big, _, m := newTestAgent(t, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 100000}}})
	m.SetFallback(fakemodel.Reply{Text: prose(5, 100)})
	cwd := t.TempDir()
	s, err := big.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for turn := 0; turn < 12; turn++ {
		if _, err := prompt(big, s.SessionID, prose(turn, 250)); err != nil {
			t.Fatal(err)
		}
	}
	// The same store, now served with a 4,096-token model by a new agent
	// (as after a restart).
	big.Close()
	small := New(&recorder{}, big.store, big.model, Config{Model: "small", Models: []request.Model{{Name: "small", ContextWindow: 4096}}}, nil)
	before := len(m.Requests())
	if _, err := small.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if len(m.Requests()) != before {
		t.Fatal("session/load called the model")
	}
	list, err := small.store.Compactions(ctx, s.SessionID)
	if err != nil || len(list) == 0 {
		t.Fatalf("no compaction on load: %v %v", list, err)
	}
	if list[len(list)-1].Policy != compaction.PolicyFallback && list[len(list)-1].Policy != compaction.PolicyDrop {
		t.Fatalf("load compacted with policy %q; want the deterministic summary", list[len(list)-1].Policy)
	}
	if _, err := prompt(small, s.SessionID, "and now?"); err != nil {
		t.Fatalf("prompt after load: %v", err)
	}
	if n := requestTokens(m.Requests()[len(m.Requests())-1]); n > 4096-1024 {
		t.Fatalf("request after load has %d tokens, over the budget", n)
	}
}

// TestContextBuildIsTheNextRequest: _crow/context/build returns exactly the
// messages the next model request carries.
func TestContextBuildIsTheNextRequest(t *testing.T) {
	ctx := context.Background()
	a, _, m := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: 32000}}})
	m.SetFallback(fakemodel.Reply{Text: "noted"})
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"first", "second", "third"} {
		if _, err := prompt(a, s.SessionID, p); err != nil {
			t.Fatal(err)
		}
	}
	params, _ := json.Marshal(map[string]string{"sessionId": s.SessionID})
	res, err := a.HandleExtMethod(ctx, "_crow/context/build", params)
	if err != nil {
		t.Fatal(err)
	}
	report := res.(*contextReport)
	if _, err := prompt(a, s.SessionID, "fourth"); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	reqs := m.Requests()
	if err := json.Unmarshal(reqs[len(reqs)-1], &sent); err != nil {
		t.Fatal(err)
	}
	// The request adds the new prompt; everything before it is the build.
	if len(sent.Messages) != len(report.Messages)+1 {
		t.Fatalf("request has %d messages, context/build %d (+1 for the new prompt)", len(sent.Messages), len(report.Messages))
	}
	for i, cm := range report.Messages {
		if string(cm.Role) != sent.Messages[i].Role || cm.Content != sent.Messages[i].Content || cm.Tokens <= 0 {
			t.Fatalf("message %d: build %s %q (%d tokens), request %s %q", i, cm.Role, cm.Content, cm.Tokens, sent.Messages[i].Role, sent.Messages[i].Content)
		}
	}
}

// TestModelTokenizer: the tokenizer is chosen per model and configurable.
func TestModelTokenizer(t *testing.T) {
	models, err := request.ParseModels("local;window=8192;tokenizer=cl100k_base, gpt-4o-mini, other;window=4096")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := request.ParseModels("m;tokenizer=klingon"); err == nil {
		t.Fatal("an unknown tokenizer was accepted")
	}
	a, _, _ := newTestAgent(t, Config{Model: "local", Models: models})
	for name, want := range map[string]string{"local": "cl100k_base", "gpt-4o-mini": "o200k_base", "other": compaction.EncodingEstimate} {
		meta, _ := json.Marshal(map[string]string{"model": name})
		m := a.build.MeterFor(&persistence.Session{ID: "s", Metadata: meta})
		if m.Model.Name != name || m.Counter.Name() != want {
			t.Errorf("model %s counts with %s (model %s), want %s", name, m.Counter.Name(), m.Model.Name, want)
		}
	}
}

// TestOneCompactionPerTurn: a tool-calling turn that outgrows the window
// again after compacting once does not compact again (no loop): it ends
// with a clear error, one compaction record, and every request sent fit.
func TestOneCompactionPerTurn(t *testing.T) {
	call := func(i int) fakemodel.Reply {
		args, _ := json.Marshal(map[string]string{"command": prose(i, 100)})
		return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "fixture_probe", Arguments: string(args)}}}
	}
	replies := []fakemodel.Reply{{Text: "noted"}}
	for i := 0; i < 30; i++ {
		replies = append(replies, call(i))
	}
	a, _, m := newTestAgent(t, Config{Model: "small", Models: []request.Model{{Name: "small", ContextWindow: 2048}}, NoTools: true}, replies...)
	ctx := context.Background()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, prose(3, 600)); err != nil {
		t.Fatal(err)
	}
	_, err = prompt(a, s.SessionID, "now probe it")
	if err == nil || !strings.Contains(err.Error(), "already compacted once") {
		t.Fatalf("turn error = %v; want the one-compaction-per-turn overflow", err)
	}
	list, _ := a.store.Compactions(ctx, s.SessionID)
	if len(list) != 1 {
		t.Fatalf("%d compactions in one turn, want 1", len(list))
	}
	for i, body := range m.Requests() {
		if n := requestTokens(body); n > 2048 {
			t.Fatalf("request %d of %d tokens was sent to a 2,048-token model", i, n)
		}
		if strings.Count(string(body), `"id":"call_0"`) > 1 {
			t.Fatalf("request %d repeats a tool call", i)
		}
	}
}

// TestFixedPartOverWindow: a system prompt larger than the budget is an
// error on the first request, before any model call (never a compaction
// loop).
func TestFixedPartOverWindow(t *testing.T) {
	a, _, m := newTestAgent(t, Config{Model: "tiny", Models: []request.Model{{Name: "tiny", ContextWindow: 1024}},
		SystemPrompt: prose(1, 1500)})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = prompt(a, s.SessionID, "hi")
	if err == nil || !strings.Contains(err.Error(), "system prompt and tool schemas alone") || len(m.Requests()) != 0 {
		t.Fatalf("error %v after %d model requests; want a clear error and no request", err, len(m.Requests()))
	}
	if list, _ := a.store.Compactions(context.Background(), s.SessionID); len(list) != 0 {
		t.Fatalf("%d compactions for an oversized system prompt", len(list))
	}
}
