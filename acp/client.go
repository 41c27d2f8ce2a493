package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"
)

// ErrAgentGone is returned by calls on a ClientConn after the agent closed
// its side of the connection (its stdout ended) or Close was called.
var ErrAgentGone = errors.New("acp: the agent closed the connection")

// ClientConn is the client side of one ACP connection, the mirror of Conn:
// typed calls to the agent, and the agent's requests and notifications
// served by a Client. It uses the same line stream as the agent side, so a
// malformed line from the agent is answered and skipped, not fatal.
//
// Ordering: session/update notifications are handed to Client.SessionUpdate
// on the read loop, one at a time, in the order the agent sent them; a call
// returns only after every update written before its response was handled.
// The agent's requests (permission, fs/*, terminal/*) each run on their own
// goroutine, so a handler may block on a person or call back into the agent
// without stalling the read loop (see STYLE.md: jsonrpc2 handlers run on the
// read loop). A Client must therefore be safe for concurrent use.
type ClientConn struct {
	stream    *LineStream
	rpc       *jsonrpc2.Conn
	handler   Client
	noUpdates bool // handler is UnimplementedClient: updates need no decoding
	log       *zap.Logger
	outID     atomic.Uint64
	wg        sync.WaitGroup // request handlers

	mu     sync.Mutex
	closed bool
	flight map[string]context.CancelCauseFunc // the agent's requests being handled, by id as sent
}

// NewClientConn starts a client connection that reads the agent's frames
// from r (the agent's stdout) and writes to w (its stdin). handler serves the
// agent's requests; nil, or any method of an embedded UnimplementedClient,
// answers -32601. Reading starts at once; the caller owns r and w.
func NewClientConn(r io.Reader, w io.Writer, handler Client, opts Options) *ClientConn {
	if handler == nil {
		handler = UnimplementedClient{}
	}
	c := &ClientConn{
		stream:  NewLineStream(r, w, opts.MaxLineBytes, opts.OnFrame),
		handler: handler,
		log:     opts.logger(),
		flight:  make(map[string]context.CancelCauseFunc),
	}
	_, c.noUpdates = handler.(UnimplementedClient)
	c.stream.onLine = c.fastUpdate
	c.rpc = jsonrpc2.NewConn(context.Background(), c.stream, c, jsonrpc2.SetLogger(zapPrintf{c.log}))
	return c
}

// Done is closed once the connection ends: the agent closed its output, or
// Close was called.
func (c *ClientConn) Done() <-chan struct{} { return c.rpc.DisconnectNotify() }

// Close ends the connection: pending calls return ErrAgentGone. It waits for
// running request handlers, whose contexts are cancelled. Closing the pipes
// (the agent's stdin) stays the caller's job.
func (c *ClientConn) Close() error {
	err := c.rpc.Close()
	c.mu.Lock()
	c.closed = true
	for _, cancel := range c.flight {
		cancel(ErrAgentGone)
	}
	c.mu.Unlock()
	c.wg.Wait()
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return nil
	}
	return err
}

// Initialize sends initialize.
func (c *ClientConn) Initialize(ctx context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	return callFor[InitializeResponse](ctx, c.Call, "initialize", req)
}

// NewSession sends session/new.
func (c *ClientConn) NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	return callFor[NewSessionResponse](ctx, c.Call, "session/new", req)
}

// LoadSession sends session/load. The agent replays the session as
// session/update notifications; they have all been handled when it returns.
func (c *ClientConn) LoadSession(ctx context.Context, req *LoadSessionRequest) (*LoadSessionResponse, error) {
	return callFor[LoadSessionResponse](ctx, c.Call, "session/load", req)
}

// Prompt sends session/prompt and waits for the turn to end; its updates
// have all been handled when it returns.
func (c *ClientConn) Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	return callFor[PromptResponse](ctx, c.Call, "session/prompt", req)
}

// Cancel sends the session/cancel notification: the running turn ends with
// stopReason "cancelled".
func (c *ClientConn) Cancel(ctx context.Context, n *CancelNotification) error {
	return c.Notify(ctx, "session/cancel", n)
}

// Call sends any request (extension methods, session/list, ...) and decodes
// its result into result. An error answer is returned as *Error. If ctx ends
// first, the agent is told with $/cancel_request and ctx's error returned.
func (c *ClientConn) Call(ctx context.Context, method string, params, result any) error {
	err := callPeer(ctx, c.rpc, c.stream, &c.outID, method, params, result, ErrAgentGone)
	if err == ErrAgentGone {
		return fmt.Errorf("%s: %w", method, err)
	}
	return err
}

// Notify sends a notification.
func (c *ClientConn) Notify(_ context.Context, method string, params any) error {
	return c.stream.writeNotification(method, params)
}

// Handle implements jsonrpc2.Handler for the agent's messages.
func (c *ClientConn) Handle(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif {
		c.handleNotification(ctx, req.Method, params)
		return
	}
	id := c.stream.takeID(req.ID)
	hctx, cancel := context.WithCancelCause(context.Background())
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel(nil)
		return
	}
	c.flight[compactJSON(id)] = cancel
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		var res any
		err := Safely(c.log, req.Method, func() (err error) {
			res, err = c.serve(hctx, req.Method, params)
			return err
		})
		c.mu.Lock()
		delete(c.flight, compactJSON(id))
		c.mu.Unlock()
		cancel(nil)
		if err != nil {
			c.log.Debug("request from the agent failed", zap.String("method", req.Method), zap.Error(err))
			_ = c.stream.writeError(id, err)
			return
		}
		_ = c.stream.writeResult(id, res)
	}()
}

// updatePrefix starts every session/update frame crow-acp writes, from the
// generic encoder and the text-chunk fast path alike.
var updatePrefix = []byte(`{"jsonrpc":"2.0","method":"session/update","params":`)

// fastUpdate handles a session/update line with one decode, before jsonrpc2
// sees it: the stream's envelope check and jsonrpc2's Request.UnmarshalJSON
// (which decodes params into map[string]any and encodes them again) would
// pass over every streamed token and replayed message four more times, and
// a client shares the machine with the agent it measures. It runs on the
// read loop, so updates keep their order relative to responses. A frame it
// does not recognise takes the general path (handleNotification).
func (c *ClientConn) fastUpdate(line []byte) bool {
	if !bytes.HasPrefix(line, updatePrefix) {
		return false
	}
	if c.noUpdates {
		return json.Valid(line) // a malformed line is answered by the general path
	}
	n, ok := textChunkOf(line)
	if !ok {
		var f struct {
			JSONRPC string               `json:"jsonrpc"`
			Method  string               `json:"method"`
			ID      json.RawMessage      `json:"id"`
			Params  *SessionNotification `json:"params"`
		}
		if json.Unmarshal(line, &f) != nil || f.JSONRPC != "2.0" || f.Method != "session/update" || f.ID != nil || f.Params == nil {
			return false
		}
		n = f.Params
	}
	if err := c.handler.SessionUpdate(context.Background(), n); err != nil {
		c.log.Debug("session/update handler", zap.Error(err))
	}
	return true
}

func (c *ClientConn) handleNotification(ctx context.Context, method string, params json.RawMessage) {
	switch {
	case method == "session/update":
		var n SessionNotification
		if err := decodeParams(params, &n); err != nil {
			c.log.Warn("bad session/update", zap.Error(err))
			return
		}
		if err := c.handler.SessionUpdate(ctx, &n); err != nil {
			c.log.Debug("session/update handler", zap.Error(err))
		}
	case method == "$/cancel_request":
		_ = cancelInFlight(&c.mu, c.flight, params)
	case strings.HasPrefix(method, "_"):
		if ext, ok := c.handler.(ExtNotificationHandler); ok {
			ext.HandleExtNotification(ctx, method, params)
		}
	default:
		c.log.Debug("ignoring unknown notification", zap.String("method", method))
	}
}

// serve runs one of the agent's requests against the handler.
func (c *ClientConn) serve(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if strings.HasPrefix(method, "_") {
		return callExtension(ctx, c.handler, method, params)
	}
	m, ok := clientMethods[method]
	if !ok {
		return nil, MethodNotFound(method)
	}
	return m(ctx, c.handler, params)
}

// clientMethods maps each method an agent may call on a client to the
// Client method serving it.
var clientMethods = map[string]func(context.Context, Client, json.RawMessage) (any, error){
	"session/request_permission": clientRoute(Client.RequestPermission),
	"fs/read_text_file":          clientRoute(Client.ReadTextFile),
	"fs/write_text_file":         clientRoute(Client.WriteTextFile),
	"terminal/create":            clientRoute(Client.CreateTerminal),
	"terminal/output":            clientRoute(Client.TerminalOutput),
	"terminal/wait_for_exit":     clientRoute(Client.WaitForTerminalExit),
	"terminal/kill":              clientRoute(noResult(Client.KillTerminal)),
	"terminal/release":           clientRoute(noResult(Client.ReleaseTerminal)),
	"elicitation/create":         serveElicitation,
}

// clientRoute decodes params into P and calls fn; an empty result is {}.
func clientRoute[P, R any](fn func(Client, context.Context, *P) (*R, error)) func(context.Context, Client, json.RawMessage) (any, error) {
	return func(ctx context.Context, h Client, raw json.RawMessage) (any, error) {
		return serveParams(ctx, raw, func(ctx context.Context, p *P) (*R, error) { return fn(h, ctx, p) })
	}
}

// noResult adapts the terminal methods that answer {}.
func noResult[P any](fn func(Client, context.Context, *P) error) func(Client, context.Context, *P) (*struct{}, error) {
	return func(h Client, ctx context.Context, p *P) (*struct{}, error) {
		return &struct{}{}, fn(h, ctx, p)
	}
}

// UnimplementedClient answers every request of the agent with -32601 and
// ignores session updates. Embed it in a Client to implement only what the
// client advertised in initialize.
type UnimplementedClient struct{}

var _ Client = UnimplementedClient{}

func (UnimplementedClient) SessionUpdate(context.Context, *SessionNotification) error { return nil }

func (UnimplementedClient) RequestPermission(context.Context, *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	return nil, MethodNotFound("session/request_permission")
}

func (UnimplementedClient) ReadTextFile(context.Context, *ReadTextFileRequest) (*ReadTextFileResponse, error) {
	return nil, MethodNotFound("fs/read_text_file")
}

func (UnimplementedClient) WriteTextFile(context.Context, *WriteTextFileRequest) (*WriteTextFileResponse, error) {
	return nil, MethodNotFound("fs/write_text_file")
}

func (UnimplementedClient) CreateTerminal(context.Context, *CreateTerminalRequest) (*CreateTerminalResponse, error) {
	return nil, MethodNotFound("terminal/create")
}

func (UnimplementedClient) TerminalOutput(context.Context, *TerminalRequest) (*TerminalOutputResponse, error) {
	return nil, MethodNotFound("terminal/output")
}

func (UnimplementedClient) WaitForTerminalExit(context.Context, *TerminalRequest) (*WaitForTerminalExitResponse, error) {
	return nil, MethodNotFound("terminal/wait_for_exit")
}

func (UnimplementedClient) KillTerminal(context.Context, *TerminalRequest) error {
	return MethodNotFound("terminal/kill")
}

func (UnimplementedClient) ReleaseTerminal(context.Context, *TerminalRequest) error {
	return MethodNotFound("terminal/release")
}
