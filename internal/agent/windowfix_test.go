package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// llamaCppAt is a provider whose endpoint reports a llama.cpp context of
// window tokens.
func llamaCppAt(window int) map[string]request.Provider {
	return map[string]request.Provider{"": {Endpoint: "http://127.0.0.1:8080/v1", Discover: func(context.Context, string) (provider.DiscoveredWindow, error) {
		return provider.DiscoveredWindow{Tokens: window, Source: "llama.cpp GET /props (default_generation_settings.n_ctx)"}, nil
	}}}
}

// TestServerWindowAdvice: when the window was discovered from llama.cpp
// and the system prompt and tool schemas do not fit it, the error names
// the server's context and the tools, not CROW_CONTEXT_WINDOW (which
// would only earn the server's refusal); nothing is sent.
func TestServerWindowAdvice(t *testing.T) {
	a, _, m := newTestAgent(t, Config{Model: "local", Providers: llamaCppAt(512)})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = prompt(a, s.SessionID, "hi")
	if err == nil || len(m.Requests()) != 0 {
		t.Fatalf("error %v after %d requests; want a refusal before any request", err, len(m.Requests()))
	}
	msg := err.Error()
	for _, want := range []string{"the system prompt and tool schemas alone need", "the server's own", "restart llama-server with a larger context (-c ", "CROW_TOOLS=off", "config forget-window"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "raise CROW_CONTEXT_WINDOW") {
		t.Errorf("the error advises raising CROW_CONTEXT_WINDOW over a server's window: %s", msg)
	}
}

// TestModelOptionShowsWindowInUse: the model selector describes the window
// the agent uses (here discovered, 2048), not the assumed 128k.
func TestModelOptionShowsWindowInUse(t *testing.T) {
	a, _, _ := newTestAgent(t, Config{Model: "local", Providers: llamaCppAt(2048)})
	a.models.WaitDiscovery()
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	for _, o := range s.ConfigOptions {
		if o.ID == configModel {
			for _, v := range o.Options {
				if v.Value == "local" {
					desc = v.Description
				}
			}
		}
	}
	if desc != "2048-token context (told by the server)" {
		t.Fatalf("model option description %q", desc)
	}
}

// TestParserFailureAdvice: llama.cpp's own output parser failing (HTTP 500
// "Failed to parse input at pos N", or the same as an error event inside a
// stream) is reported as the server's parser failing, never as an
// unreachable endpoint.
func TestParserFailureAdvice(t *testing.T) {
	const msg = `Failed to parse input at pos 13: <tool_call>{\"name\": \"read_file\"`
	for name, reply := range map[string]fakemodel.Reply{
		"HTTP 500": {Status: 500, ErrorBody: `{"error":{"code":500,"message":"` + msg + `","type":"server_error"}}`},
		"stream error event": {RawSSE: "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
			"data: {\"error\":{\"code\":500,\"message\":\"" + msg + "\",\"type\":\"server_error\"}}\n\n"},
	} {
		t.Run(name, func(t *testing.T) {
			a, _, _ := newTestAgent(t, Config{Model: "m", NoTools: true, Retry: RetryPolicy{MaxAttempts: 1}}, reply)
			s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = prompt(a, s.SessionID, "read it")
			if err == nil {
				t.Fatal("no error")
			}
			if d := errData(t, err); d["reason"] != "server_parser_failed" {
				t.Errorf("error data %v", d)
			}
			text := err.Error()
			if strings.Contains(text, "check that the endpoint is reachable") || !strings.Contains(text, "the model server's own parser could not read the reply") ||
				!strings.Contains(text, "--chat-template") {
				t.Fatalf("error: %s", text)
			}
		})
	}
}

// TestTimeoutInPlainWords: a request stopped by the request timeout says
// which timeout, its value and the setting that raises it, not "context
// deadline exceeded".
func TestTimeoutInPlainWords(t *testing.T) {
	store := newTestStore(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "slow words here", DelayMS: 400})
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), Timeout: 300 * time.Millisecond})
	a := New(&recorder{}, store, model, Config{Model: "m", NoTools: true, Retry: RetryPolicy{MaxAttempts: 1}}, nil)
	defer a.Close()
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = prompt(a, s.SessionID, "hi")
	if err == nil {
		t.Fatal("no error")
	}
	text := err.Error()
	if strings.Contains(text, "deadline exceeded") || !strings.Contains(text, "took longer than the request timeout of 300ms") ||
		!strings.Contains(text, "CROW_MODEL_TIMEOUT") {
		t.Fatalf("error: %s", text)
	}
}

// TestOverBudgetRequestThatFitsIsSent: a request over the budget (the
// window minus the reply reserve) that compaction cannot shrink, but that
// fits the window itself, is sent instead of ending the turn with "the
// context window is full".
func TestOverBudgetRequestThatFitsIsSent(t *testing.T) {
	// 2048 tokens, 512 reserved: a ~1,700-token first prompt is over the
	// 1,536 budget and nothing older can be compacted.
	a, _, m := newTestAgent(t, Config{Model: "small", Models: []request.Model{{Name: "small", ContextWindow: 2048}}, NoTools: true},
		fakemodel.Reply{Text: "answered"})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := prose(2, 1450)
	if n := a.build.CounterFor(a.models.Named("small")).Count(p); n < 1550 || n > 1850 {
		t.Fatalf("the prompt has %d tokens; the test wants it between the budget and the window", n)
	}
	res, err := prompt(a, s.SessionID, p)
	if err != nil || res.StopReason != acp.StopEndTurn || len(m.Requests()) != 1 {
		t.Fatalf("prompt: %v %v after %d requests; want it sent", res, err, len(m.Requests()))
	}
}
