package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
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
	ctx := context.Background()
	a, _, m := newTestAgent(t, Config{Model: "m", DefaultMode: ModeBypass, ClientCallTimeout: 200 * time.Millisecond},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"echo hi"}`}}},
		fakemodel.Reply{Text: "the terminal did not start"})
	a.client = &silentTerminalClient{}
	if _, err := a.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1, ClientCapabilities: acp.ClientCapabilities{Terminal: true}}); err != nil {
		t.Fatal(err)
	}
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := prompt(a, s.SessionID, "run echo")
	if err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("turn with a silent client: %v %v", res, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the turn took %s; the bound is 200ms", d)
	}
	reqs := m.Requests()
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
	ctx := context.Background()
	a, _, m := newTestAgent(t, Config{Model: "m", DefaultMode: ModeBypass, ClientCallTimeout: 200 * time.Millisecond},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"sleep 100","timeout":1}`}}},
		fakemodel.Reply{Text: "it timed out"})
	a.client = &mutedTerminalClient{}
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
		t.Fatalf("turn with a muted client: %v %v", res, err)
	}
	// 1 s of command timeout, then kill and output at 0.2 s each (5 s each
	// without the bound).
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("the turn took %s", d)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "timed out after 1s") {
		t.Fatalf("%d model requests; the tool result should report the timeout: %s", len(reqs), reqs[len(reqs)-1])
	}
}
