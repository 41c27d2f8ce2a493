package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// overflowReplies are the overflow errors of each provider family, with the
// window each states (see streaming/overflow_test.go for the sources).
var overflowReplies = []struct {
	name   string
	reply  fakemodel.Reply
	window int
}{
	{"openai", fakemodel.Reply{Status: 400, ErrorBody: `{"error":{"message":"This model's maximum context length is 6000 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}, 6000},
	{"vllm", fakemodel.Reply{Status: 400, ErrorBody: `{"object":"error","message":"This model's maximum context length is 6000 tokens. However, you requested 9100 tokens. Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`}, 6000},
	{"llama.cpp 400", fakemodel.Reply{Status: 400, ErrorBody: `{"error":{"code":400,"message":"request (9100 tokens) exceeds the available context size (6000 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9100,"n_ctx":6000}}`}, 6000},
	{"llama.cpp 500", fakemodel.Reply{Status: 500, ErrorBody: `{"error":{"code":500,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9100,"n_ctx":6000}}`}, 6000},
	{"anthropic", fakemodel.Reply{Status: 400, ErrorBody: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9100 tokens > 6000 maximum"}}`}, 6000},
	{"gemini", fakemodel.Reply{Status: 400, ErrorBody: `[{"error":{"code":400,"message":"The input token count (9100) exceeds the maximum number of tokens allowed (6000).","status":"INVALID_ARGUMENT"}}]`}, 6000},
	{"openai bare code", fakemodel.Reply{Status: 400, ErrorBody: `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`}, 0},
}

// longHistory runs turns of about 600 tokens each until the session holds
// about n tokens, with a model that believes its window is huge.
func longHistory(t *testing.T, a *Agent, m *fakemodel.Server, sessionID string, turns int) {
	t.Helper()
	for i := 0; i < turns; i++ {
		m.Enqueue(fakemodel.Reply{Text: prose(i+50, 200)})
		if _, err := prompt(a, sessionID, fmt.Sprintf("Turn %d. %s", i, prose(i, 250))); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
}

func (r *recorder) agentText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, u := range r.updates {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

// TestOverflowRecovery: for each provider's overflow error, the turn learns
// the window from it, compacts, retries once and ends normally; the retried
// request fits the learned window by the provider's count; the user is told.
func TestOverflowRecovery(t *testing.T) {
	for _, c := range overflowReplies {
		t.Run(c.name, func(t *testing.T) {
			a, rec, m := newTestAgent(t, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 200000}}, NoTools: true})
			s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			longHistory(t, a, m, s.SessionID, 8) // ~4,800 tokens accepted: under the 6,000 the refusal names
			before := len(m.Requests())
			m.Enqueue(c.reply, fakemodel.Reply{Text: "Summary: the task so far."}, fakemodel.Reply{Text: "Here is the answer."})
			res, err := prompt(a, s.SessionID, "And now the last question.")
			if err != nil || res.StopReason != acp.StopEndTurn {
				t.Fatalf("prompt after the overflow: %v %v", res, err)
			}
			reqs := m.Requests()[before:]
			if len(reqs) != 3 {
				t.Fatalf("%d requests after the overflow, want refused + summary + retry", len(reqs))
			}
			window := c.window
			if window == 0 {
				window = requestTokens(reqs[0]) * 9 / 10
			}
			retry := reqs[2]
			if n := requestTokens(retry); n > window {
				t.Fatalf("the retried request has %d tokens, over the learned %d-token window", n, window)
			}
			if !strings.Contains(string(retry), "And now the last question.") {
				t.Fatal("the retried request lost the newest prompt")
			}
			if got := a.sessionModel(mustSession(t, a, s.SessionID)).ContextWindow; c.window > 0 && got != c.window {
				t.Errorf("the session's model window is %d, want the learned %d", got, c.window)
			}
			if txt := rec.agentText(); !strings.Contains(txt, "refused the request") || !strings.Contains(txt, "trying again once") {
				t.Errorf("the user was not told: %q", txt)
			}
			list, _ := a.store.Compactions(context.Background(), s.SessionID)
			if len(list) == 0 {
				t.Fatal("no compaction was recorded")
			}
		})
	}
}

// TestOverflowRetriesOnce: when the retried request is refused too, the
// turn fails with a clear error; there is no third request.
func TestOverflowRetriesOnce(t *testing.T) {
	a, _, m := newTestAgent(t, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 200000}}, NoTools: true})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	longHistory(t, a, m, s.SessionID, 8) // ~4,800 tokens accepted: under the 6,000 the refusal names
	before := len(m.Requests())
	refused := overflowReplies[2].reply
	// Exactly the replies the turn may use: a third request would find none
	// (the fallback answers) and fail the count below.
	m.Enqueue(refused, fakemodel.Reply{Text: "Summary."}, refused)
	_, err = prompt(a, s.SessionID, "Last question.")
	if err == nil {
		t.Fatal("a request refused twice ended the turn without an error")
	}
	if d := errData(t, err); d["reason"] != "context_window_exceeded" || d["window"] != 6000 {
		t.Errorf("error data %v", d)
	}
	if n := len(m.Requests()) - before; n != 3 {
		t.Fatalf("%d requests, want refused + summary + one retry", n)
	}
	// The next turn starts with the learned window: it fits at once.
	m.Enqueue(fakemodel.Reply{Text: "fine"})
	if _, err := prompt(a, s.SessionID, "again"); err != nil {
		t.Fatalf("the turn after: %v", err)
	}
}

// TestOverflowWithAutoCompactionOff: the window is learned and the user
// told, but nothing is compacted and nothing retried.
func TestOverflowWithAutoCompactionOff(t *testing.T) {
	st := compaction.Defaults()
	st.Auto = false
	a, rec, m := newTestAgent(t, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 200000}}, NoTools: true, Compaction: &st})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m.Enqueue(overflowReplies[0].reply)
	if _, err := prompt(a, s.SessionID, "hello"); err == nil {
		t.Fatal("no error")
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if !strings.Contains(rec.agentText(), "Automatic compaction is off") {
		t.Errorf("the user was not told: %q", rec.agentText())
	}
	if list, _ := a.store.Compactions(context.Background(), s.SessionID); len(list) != 0 {
		t.Fatal("compacted with automatic compaction off")
	}
}

// TestOllamaTruncationDetected: Ollama reports far fewer prompt tokens than
// were sent (it kept the last num_ctx tokens without a word): the user is
// warned once, and the reported size becomes the window, so the next
// request is compacted to fit it.
func TestOllamaTruncationDetected(t *testing.T) {
	ollama := map[string]request.Provider{"": {SilentTruncation: true}}
	a, rec, m := newTestAgent(t, Config{Model: "qwen3:8b", Models: []request.Model{{Name: "qwen3:8b", ContextWindow: 40960}}, NoTools: true, Providers: ollama})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// ~2,500 tokens, all kept (under num_ctx), then a long prompt takes the
	// request to ~9,000, of which Ollama keeps 4096. Both sizes are far from
	// what they are judged against (checked below), so that no date, path
	// or machine moves them across: the largest accepted prompt under 4096
	// (else the report is not believed), the request over twice 4096 (else
	// it is not a truncation).
	longHistory(t, a, m, s.SessionID, 3)
	if accepted := a.models.AcceptedFor(a.models.Named("qwen3:8b")); accepted > 3500 {
		t.Fatalf("the history's largest request has %d tokens: it must stay far under the 4096 Ollama keeps", accepted)
	}
	m.Enqueue(fakemodel.Reply{Text: "Partial view.", Usage: &fakemodel.Usage{PromptTokens: 4096, CompletionTokens: 4, TotalTokens: 4100}})
	if _, err := prompt(a, s.SessionID, "What did I ask first? "+prose(7, 6000)); err != nil {
		t.Fatal(err)
	}
	st := a.sessions.get(s.SessionID)
	sent := st.req.Estimated()
	if 4096 > 0.5*float64(sent) {
		t.Fatalf("the test's request has only %d tokens: 4096 kept must be far under the truncation ratio of it", sent)
	}
	if n := strings.Count(rec.agentText(), "kept only 4096"); n != 1 {
		t.Fatalf("%d truncation warnings, want 1: %q", n, rec.agentText())
	}
	if got := a.sessionModel(mustSession(t, a, s.SessionID)).ContextWindow; got != 4096 {
		t.Fatalf("window %d, want the 4096 Ollama kept", got)
	}
	before := len(m.Requests())
	m.Enqueue(fakemodel.Reply{Text: "Summary."}, fakemodel.Reply{Text: "ok"})
	if _, err := prompt(a, s.SessionID, "next"); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()[before:]
	if n := requestTokens(reqs[len(reqs)-1]); n > 4096 {
		t.Fatalf("the next request has %d tokens, over the 4096 Ollama keeps", n)
	}
	// The same truncation reported again warns no more.
	st.req.Remember([]request.ContextEntry{{}}, 9000)
	res := &provider.Result{Usage: &provider.Usage{PromptTokens: 4096}}
	if !a.build.DetectTruncation(context.Background(), &st.req, mustSession(t, a, s.SessionID), a.models.Named("qwen3:8b"), provider.Request{}, res) {
		t.Fatal("the second truncation was not detected")
	}
	if n := strings.Count(rec.agentText(), "kept only"); n != 1 {
		t.Fatalf("%d truncation warnings after a second truncation, want 1", n)
	}
}

// TestNoTruncationWithinEstimateError: a report within our counting error
// is not a truncation.
func TestNoTruncationWithinEstimateError(t *testing.T) {
	a, rec, _ := newTestAgent(t, Config{Model: "m", NoTools: true, Providers: map[string]request.Provider{"": {SilentTruncation: true}}})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st := a.sessions.get(s.SessionID)
	st.req.Remember([]request.ContextEntry{{}}, 9000)
	sess := mustSession(t, a, s.SessionID)
	res := &provider.Result{Usage: &provider.Usage{PromptTokens: 6000}}
	if a.build.DetectTruncation(context.Background(), &st.req, sess, a.models.Named("m"), provider.Request{}, res) || rec.agentText() != "" {
		t.Fatal("a report at two thirds of our count read as a truncation")
	}
	// An endpoint that refuses instead of truncating is not judged at all.
	b, _, _ := newTestAgent(t, Config{Model: "m", NoTools: true})
	bs, err := b.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	bst := b.sessions.get(bs.SessionID)
	bst.req.Remember([]request.ContextEntry{{}}, 9000)
	res.Usage.PromptTokens = 100
	if b.build.DetectTruncation(context.Background(), &bst.req, mustSession(t, b, bs.SessionID), b.models.Named("m"), provider.Request{}, res) {
		t.Fatal("a provider that does not truncate silently was judged")
	}
}

func mustSession(t *testing.T, a *Agent, id string) *persistence.Session {
	t.Helper()
	s, err := a.store.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// contradictingRefusals are a refusal in the OpenAI and the llama.cpp
// shape, formatted with the window they name and the prompt they refuse,
// in tokens.
var contradictingRefusals = []struct{ name, body string }{
	{"openai", `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
	{"llama.cpp", `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_ctx":%d,"n_prompt_tokens":%d}}`},
}

// contradictingSetup is a session whose endpoint accepted a long history
// in a window configured at 200,000 tokens; window is three quarters of
// the largest prompt it accepted: what it names when it turns strict.
func contradictingSetup(t *testing.T) (a *Agent, rec *recorder, m *fakemodel.Server, sid, cwd string, window, accepted int) {
	t.Helper()
	a, rec, m = newTestAgent(t, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 200000}}})
	cwd = t.TempDir()
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	longHistory(t, a, m, s.SessionID, 8)
	accepted = a.models.AcceptedFor(a.models.Named("big"))
	return a, rec, m, s.SessionID, cwd, accepted * 3 / 4, accepted
}

// TestContradictingEndpointFittedWithinTurn (issue 37): an endpoint that
// accepted a prompt refuses a later one naming a window under it (OpenRouter
// sent the model to a provider with less context; llama-server or Ollama
// restarted with a smaller one). That window is not remembered (one answer
// must not shrink every later turn), but the refused request is compacted
// to it and retried once within the turn, and the turn's later requests
// (after a tool call) fit it too.
func TestContradictingEndpointFittedWithinTurn(t *testing.T) {
	for _, shape := range contradictingRefusals {
		t.Run(shape.name, func(t *testing.T) {
			a, rec, m, sid, cwd, window, accepted := contradictingSetup(t)
			if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("the parser is in parse.go\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := len(m.Requests())
			m.Enqueue(fakemodel.Reply{Status: 400, ErrorBody: fmt.Sprintf(shape.body, window, accepted+500)},
				fakemodel.Reply{Text: "Summary: the task so far."},
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}},
				fakemodel.Reply{Text: "Here is the answer."})
			res, err := prompt(a, sid, "And now the last question.")
			if err != nil || res.StopReason != acp.StopEndTurn {
				t.Fatalf("a refusal under an accepted prompt ended the turn: %v %v", res, err)
			}
			reqs := m.Requests()[before:]
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want refused + summary + retry + the one after the tool call", len(reqs))
			}
			for i, r := range reqs[2:] {
				if n := requestTokens(r); n > window {
					t.Errorf("request %d of the turn after the refusal has %d tokens, over the %d-token window the endpoint named", i+3, n, window)
				}
			}
			if !strings.Contains(string(reqs[2]), "And now the last question.") {
				t.Error("the retried request lost the newest prompt")
			}
			if txt := rec.agentText(); !strings.Contains(txt, "refused the request") || !strings.Contains(txt, "trying again once") {
				t.Errorf("the user was not told: %q", txt)
			}
			// Not remembered: the next turn is measured against the
			// configured window again, and is not compacted.
			if n, src := a.windowSource("big"); n != 200000 || src != request.WindowConfigured {
				t.Fatalf("window %d from %q after a refusal under an accepted prompt", n, src)
			}
			compactions, _ := a.store.Compactions(context.Background(), sid)
			m.Enqueue(fakemodel.Reply{Text: "fine"})
			if _, err := prompt(a, sid, "again"); err != nil {
				t.Fatalf("the turn after: %v", err)
			}
			if after, _ := a.store.Compactions(context.Background(), sid); len(after) != len(compactions) || len(compactions) != 1 {
				t.Errorf("%d compactions, then %d after the next turn: want the turn's one and no other", len(compactions), len(after))
			}
		})
	}
}

// TestContradictingEndpointLaterRequestOverWindow (issue 37): after the
// turn's one recovery, a tool result that pushes its next request over the
// window the endpoint named ends the turn with a clear error: the request
// the endpoint said it cannot take is not sent (no second compaction, no
// second refusal).
func TestContradictingEndpointLaterRequestOverWindow(t *testing.T) {
	a, _, m, sid, cwd, window, accepted := contradictingSetup(t)
	big := strings.Repeat(prose(7, 40)+"\n", 2*window/40)
	if err := os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(m.Requests())
	m.Enqueue(fakemodel.Reply{Status: 400, ErrorBody: fmt.Sprintf(contradictingRefusals[0].body, window, accepted+500)},
		fakemodel.Reply{Text: "Summary: the task so far."},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"big.txt"}`}}})
	m.SetFallback(fakemodel.Reply{Text: "sent anyway"})
	_, err := prompt(a, sid, "Read big.txt.")
	if err == nil {
		t.Fatal("a request over the window the endpoint named ended the turn without an error")
	}
	if d := errData(t, err); d["reason"] != "context_window_exceeded" {
		t.Errorf("error %v, data %v", err, d)
	}
	reqs := m.Requests()[before:]
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want refused + summary + retry, and not the next one over the window", len(reqs))
	}
	if n := requestTokens(reqs[2]); n > window {
		t.Errorf("the retried request has %d tokens, over the %d-token window the endpoint named", n, window)
	}
}
