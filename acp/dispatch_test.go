package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// slowAgent adds a session/load that blocks until its request is cancelled,
// and a session/new that announces the session after its response.
type slowAgent struct {
	fakeAgent
	loadStarted chan struct{}
}

func (a *slowAgent) NewSession(ctx context.Context, _ *NewSessionRequest) (*NewSessionResponse, error) {
	AfterResponse(ctx, func() {
		_ = a.client.SessionUpdate(ctx, &SessionNotification{SessionID: "s1",
			Update: SessionUpdate{AvailableCommandsUpdate: &AvailableCommandsUpdate{AvailableCommands: []AvailableCommand{}}}})
	})
	return &NewSessionResponse{SessionID: "s1"}, nil
}

func (a *slowAgent) LoadSession(ctx context.Context, _ *LoadSessionRequest) (*LoadSessionResponse, error) {
	close(a.loadStarted)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), ErrRequestCancelled) {
		return nil, errors.New("cancelled for the wrong reason")
	}
	return nil, ctx.Err()
}

// startWith serves the agent made by mk over pipes.
func startWith(t *testing.T, mk func(*Conn) Agent) (*pipeClient, Agent) {
	t.Helper()
	return startWithOptions(t, Options{}, mk)
}

// startWithOptions is startWith with connection options.
func startWithOptions(t *testing.T, opts Options, mk func(*Conn) Agent) (*pipeClient, Agent) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := NewConn(inR, outW, opts)
	agent := mk(conn)
	done := make(chan error, 1)
	go func() { done <- conn.Serve(context.Background(), agent); outW.Close() }()
	c := &pipeClient{t: t, in: inW, out: bufio.NewReader(outR), done: done}
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after stdin closed")
		}
	})
	return c, agent
}

func TestAfterResponseFollowsTheResponse(t *testing.T) {
	c, _ := startWith(t, func(conn *Conn) Agent {
		return &slowAgent{fakeAgent: fakeAgent{client: conn, cancelled: make(chan string, 1)}, loadStarted: make(chan struct{})}
	})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	if m := c.recv(); string(m["id"]) != "1" {
		t.Fatalf("first frame should be the session/new response, got %v", m)
	}
	if m := c.recv(); string(m["method"]) != `"session/update"` {
		t.Fatalf("second frame should be the update sent after the response, got %v", m)
	}
	if m := c.recv(); string(m["id"]) != "2" {
		t.Fatalf("the next request must be answered after the hooks ran, got %v", m)
	}
}

func TestCancelRequestAnswersASlowRequestWith32800AndKeepsOrder(t *testing.T) {
	var sa *slowAgent
	c, _ := startWith(t, func(conn *Conn) Agent {
		sa = &slowAgent{fakeAgent: fakeAgent{client: conn, cancelled: make(chan string, 1)}, loadStarted: make(chan struct{})}
		return sa
	})
	c.send(`{"jsonrpc":"2.0","id":"load-1","method":"session/load","params":{"sessionId":"s1","cwd":"/tmp","mcpServers":[]}}`)
	<-sa.loadStarted
	// Queued behind the slow load: answered only after it, and cancellable
	// while it waits.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}`)
	c.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}`)
	c.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"load-1"}}`)
	m := c.recv()
	if string(m["id"]) != `"load-1"` || errCode(t, m) != CodeRequestCancelled {
		t.Fatalf("want load-1 answered -32800, got %v", m)
	}
	if m := c.recv(); string(m["id"]) != "2" || m["result"] == nil {
		t.Fatalf("request 2 should follow with a result, got %v", m)
	}
	if m := c.recv(); string(m["id"]) != "3" || errCode(t, m) != CodeRequestCancelled {
		t.Fatalf("request 3 was cancelled while queued: want -32800, got %v", m)
	}
}

// fsAgent reads a file from the client in its prompt.
type fsAgent struct{ fakeAgent }

func (a *fsAgent) Prompt(ctx context.Context, r *PromptRequest) (*PromptResponse, error) {
	if _, err := a.client.ReadTextFile(ctx, &ReadTextFileRequest{SessionID: r.SessionID, Path: "/x"}); err != nil {
		return nil, err
	}
	return &PromptResponse{StopReason: StopEndTurn}, nil
}

func TestUnadvertisedClientMethodsAreNeverCalled(t *testing.T) {
	c, _ := startWith(t, func(conn *Conn) Agent {
		return &fsAgent{fakeAgent{client: conn, cancelled: make(chan string, 1)}}
	})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false}}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	m := c.recv()
	if string(m["id"]) != "1" || errCode(t, m) != CodeMethodNotFound {
		t.Fatalf("want the prompt to fail without an fs/read_text_file request, got %v", m)
	}
	// Advertised: the request goes out.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	if m := c.recv(); string(m["method"]) != `"fs/read_text_file"` {
		t.Fatalf("want an fs/read_text_file request, got %v", m)
	}
}

func TestUnstableUpdateKindsNeedTheClientCapability(t *testing.T) {
	var conn *Conn
	c, _ := startWith(t, func(cn *Conn) Agent {
		conn = cn
		return &fakeAgent{client: cn, cancelled: make(chan string, 1)}
	})
	notice := &SessionNotification{SessionID: "s1", Update: SessionUpdate{
		Other: json.RawMessage(`{"sessionUpdate":"compaction_update","status":"started"}`)}}
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	c.recv()
	if err := conn.SessionUpdate(context.Background(), notice); err == nil {
		t.Fatal("compaction_update sent to a client that did not advertise session.compaction")
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}}`)
	c.recv()
	errc := make(chan error, 1)
	go func() { errc <- conn.SessionUpdate(context.Background(), notice) }() // the pipe needs a reader
	m := c.recv()
	if err := <-errc; err != nil {
		t.Fatalf("advertised: %v", err)
	}
	if !strings.Contains(string(m["params"]), "compaction_update") {
		t.Fatalf("want the update on the wire, got %v", m)
	}
}

func TestSubagentUpdateNeedsTheClientCapability(t *testing.T) {
	var conn *Conn
	c, _ := startWith(t, func(cn *Conn) Agent {
		conn = cn
		return &fakeAgent{client: cn, cancelled: make(chan string, 1)}
	})
	u := &SessionNotification{SessionID: "s1", Update: SubagentUpdate{SessionID: "s2", State: &SubagentState{State: SubagentRunning}}.Update()}
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":null}}}`)
	c.recv()
	if err := conn.SessionUpdate(context.Background(), u); err == nil {
		t.Fatal("subagent_update sent to a client that did not advertise subagents")
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}}`)
	c.recv()
	errc := make(chan error, 1)
	go func() { errc <- conn.SessionUpdate(context.Background(), u) }() // the pipe needs a reader
	m := c.recv()
	if err := <-errc; err != nil {
		t.Fatalf("advertised: %v", err)
	}
	if want := `{"sessionId":"s1","update":{"sessionUpdate":"subagent_update","sessionId":"s2","state":{"state":"running"}}}`; string(m["params"]) != want {
		t.Fatalf("got %s, want %s", m["params"], want)
	}
}
