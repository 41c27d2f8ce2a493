package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// silentTerminalClient offers terminals and never answers terminal/create:
// like acp.Conn's calls, it gives up only when its context ends.
type silentTerminalClient struct{ recorder }

func (c *silentTerminalClient) CreateTerminal(ctx context.Context, _ *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestClientThatNeverAnswersTerminalCreate: issue 29 finding 6. The tool
// call fails after the bound with a message naming terminal/create, and
// the turn goes on (the model gets the failure and answers).
func TestClientThatNeverAnswersTerminalCreate(t *testing.T) {
	d, reqs := turnWithTerminalClient(t, &silentTerminalClient{}, `{"command":"echo hi"}`)
	if d > 10*time.Second {
		t.Fatalf("the turn took %s; the bound is 200ms", d)
	}
	if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "did not answer terminal/create within 200ms") {
		t.Fatalf("%d model requests; the tool result the model got should name terminal/create: %s", len(reqs), reqs[len(reqs)-1])
	}
}

// mutedTerminalClient creates terminals, then never answers anything about
// them: not wait_for_exit, kill, output or release.
type mutedTerminalClient struct{ recorder }

func (c *mutedTerminalClient) CreateTerminal(context.Context, *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	return &acp.CreateTerminalResponse{TerminalID: "term_1"}, nil
}

func (c *mutedTerminalClient) block(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

func (c *mutedTerminalClient) WaitForTerminalExit(ctx context.Context, _ *acp.TerminalRequest) (*acp.WaitForTerminalExitResponse, error) {
	return nil, c.block(ctx)
}
func (c *mutedTerminalClient) TerminalOutput(ctx context.Context, _ *acp.TerminalRequest) (*acp.TerminalOutputResponse, error) {
	return nil, c.block(ctx)
}
func (c *mutedTerminalClient) KillTerminal(ctx context.Context, _ *acp.TerminalRequest) error {
	return c.block(ctx)
}
func (c *mutedTerminalClient) ReleaseTerminal(ctx context.Context, _ *acp.TerminalRequest) error {
	return c.block(ctx)
}

// TestClientThatGoesSilentAfterTerminalCreate: wait_for_exit is bounded by
// the command's timeout, and the kill, output and release after it by the
// client-call bound: the tool reports the timeout and the turn ends.
func TestClientThatGoesSilentAfterTerminalCreate(t *testing.T) {
	d, reqs := turnWithTerminalClient(t, &mutedTerminalClient{}, `{"command":"sleep 100","timeout":1}`)
	// 1 s of command timeout, then kill and output at 0.2 s each (5 s each,
	// 11 s in all, without the bound; the margin is for a loaded machine).
	if d > 8*time.Second {
		t.Fatalf("the turn took %s", d)
	}
	if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "timed out after 1s") {
		t.Fatalf("%d model requests; the tool result should report the timeout: %s", len(reqs), reqs[len(reqs)-1])
	}
}

// TestTerminalCreateUnansweredOnTheWire: the same over a real connection.
// The client reads terminal/create and never answers it: after the bound
// the agent withdraws the request ($/cancel_request with its id), fails the
// tool call saying which method went unanswered, and ends the turn.
func TestTerminalCreateUnansweredOnTheWire(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"echo hi"}`}}},
		fakemodel.Reply{Text: "no terminal"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := acp.NewConn(inR, outW, acp.Options{})
	a := New(conn, newTestStore(t), newTestModel(m), Config{Model: "m", DefaultMode: ModeBypass, ClientCallTimeout: 200 * time.Millisecond}, nil)
	served := make(chan struct{})
	go func() { _ = conn.Serve(context.Background(), a); a.Close(); outW.Close(); close(served) }()
	t.Cleanup(func() { inW.Close(); <-served })
	frames := make(chan map[string]json.RawMessage, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var f map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &f) == nil {
				frames <- f
			}
		}
		close(frames)
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next frame that matches, failing after 10 s.
	next := func(what string, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case f, ok := <-frames:
				if !ok {
					t.Fatalf("the agent closed its output waiting for %s", what)
				}
				if match(f) {
					return f
				}
			case <-deadline:
				t.Fatalf("no %s within 10s", what)
			}
		}
	}
	response := func(id string) func(map[string]json.RawMessage) bool {
		return func(f map[string]json.RawMessage) bool { return f["method"] == nil && string(f["id"]) == id }
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"terminal":true}}}`)
	next("initialize", response("0"))
	send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + strconv.Quote(t.TempDir()) + `,"mcpServers":[]}}`)
	var created struct {
		Result struct{ SessionID string } `json:"result"`
	}
	if b, _ := json.Marshal(next("session/new", response("1"))); json.Unmarshal(b, &created) != nil || created.Result.SessionID == "" {
		t.Fatal("session/new answered without a session id")
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + created.Result.SessionID + `","prompt":[{"type":"text","text":"run it"}]}}`)
	create := next("terminal/create", func(f map[string]json.RawMessage) bool { return string(f["method"]) == `"terminal/create"` })
	withdrawn := next("$/cancel_request", func(f map[string]json.RawMessage) bool { return string(f["method"]) == `"$/cancel_request"` })
	if !strings.Contains(string(withdrawn["params"]), `"requestId":`+string(create["id"])) {
		t.Fatalf("$/cancel_request %s does not name terminal/create's id %s", withdrawn["params"], create["id"])
	}
	failed := next("the failed tool call", func(f map[string]json.RawMessage) bool {
		return string(f["method"]) == `"session/update"` && strings.Contains(string(f["params"]), `"status":"failed"`)
	})
	if !strings.Contains(string(failed["params"]), "did not answer terminal/create within 200ms") {
		t.Fatalf("the failed tool call does not name terminal/create: %s", failed["params"])
	}
	if end := next("the prompt's answer", response("2")); !strings.Contains(string(end["result"]), `"end_turn"`) {
		t.Fatalf("prompt answered %s; want end_turn", end["result"])
	}
}

// turnWithTerminalClient runs one turn in bypass mode whose model runs
// run_command with args against client (a terminal-capable client that
// stops answering), with a 200 ms client-call bound. It returns how long
// the turn took and the model's requests.
func turnWithTerminalClient(t *testing.T, client acp.Client, args string) (time.Duration, []json.RawMessage) {
	t.Helper()
	ctx := context.Background()
	a, _, m := newTestAgent(t, Config{Model: "m", DefaultMode: ModeBypass, ClientCallTimeout: 200 * time.Millisecond},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: args}}},
		fakemodel.Reply{Text: "the command did not run"})
	a.client = client
	if _, err := a.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1, ClientCapabilities: acp.ClientCapabilities{Terminal: true}}); err != nil {
		t.Fatal(err)
	}
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := prompt(a, s.SessionID, "run it")
	if err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("turn with a client that stops answering: %v %v", res, err)
	}
	return time.Since(start), m.Requests()
}
