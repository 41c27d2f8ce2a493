package acp

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// panicAgent has a bug in session/new (on the dispatcher), in its
// AfterResponse hook, in session/cancel and in the prompt turn (async).
type panicAgent struct{ fakeAgent }

func (a *panicAgent) NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	if req.Cwd == "/hook" {
		AfterResponse(ctx, func() { panic("hook bug") })
		return &NewSessionResponse{SessionID: "s1"}, nil
	}
	var r *NewSessionRequest
	return &NewSessionResponse{SessionID: r.Cwd}, nil // nil pointer: a real runtime panic
}

func (a *panicAgent) Prompt(context.Context, *PromptRequest) (*PromptResponse, error) {
	var s []int
	_ = s[len(s)-1] // index out of range [-1], as in issue 29
	return nil, nil
}

func (a *panicAgent) Cancel(context.Context, *CancelNotification) error { panic("cancel bug") }

// TestPanicsBecomeInternalErrors: a panic in any handler is answered with
// -32603, logged with its stack, and the connection keeps serving.
func TestPanicsBecomeInternalErrors(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	c, _ := startWithOptions(t, Options{Logger: zap.New(core)}, func(conn *Conn) Agent {
		return &panicAgent{fakeAgent{client: conn, cancelled: make(chan string, 1)}}
	})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	m := c.recv()
	if code := errCode(t, m); code != CodeInternalError || !strings.Contains(string(m["error"]), "internal error in session/new") {
		t.Fatalf("session/new that panics answered %s; want -32603 naming the method", m["error"])
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	if m := c.recv(); errCode(t, m) != CodeInternalError {
		t.Fatalf("a prompt turn that panics answered %v; want -32603", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/hook","mcpServers":[]}}`)
	if m := c.recv(); string(m["id"]) != "3" || m["result"] == nil {
		t.Fatalf("session/new after the panics: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}`)
	if m := c.recv(); string(m["id"]) != "4" || m["result"] == nil {
		t.Fatalf("the connection stopped serving after panics: %v", m)
	}
	entries := logs.All()
	if len(entries) != 4 {
		t.Fatalf("%d error log lines, want one per panic (4): %v", len(entries), entries)
	}
	for _, e := range entries {
		stack, _ := e.ContextMap()["stack"].(string)
		if !strings.Contains(stack, "panicAgent") {
			t.Fatalf("log line %q has no stack naming the culprit: %q", e.Message, stack)
		}
	}
}
