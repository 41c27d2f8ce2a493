package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"
)

// Agent is the baseline every ACP agent implements. Optional methods are
// separate interfaces (see methods.go); an agent that lacks one answers
// -32601 for it.
type Agent interface {
	Initialize(ctx context.Context, req *InitializeRequest) (*InitializeResponse, error)
	Authenticate(ctx context.Context, req *AuthenticateRequest) (*AuthenticateResponse, error)
	NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error)
	// Prompt runs a whole turn. It is called on its own goroutine so that it
	// can call back into the client; every update it sends is written before
	// its response.
	Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error)
	Cancel(ctx context.Context, req *CancelNotification) error
}

// Client is what an agent may ask of the client. Callers must respect the
// capabilities the client advertised in initialize.
type Client interface {
	SessionUpdate(ctx context.Context, n *SessionNotification) error
	RequestPermission(ctx context.Context, req *RequestPermissionRequest) (*RequestPermissionResponse, error)
	ReadTextFile(ctx context.Context, req *ReadTextFileRequest) (*ReadTextFileResponse, error)
	WriteTextFile(ctx context.Context, req *WriteTextFileRequest) (*WriteTextFileResponse, error)
	CreateTerminal(ctx context.Context, req *CreateTerminalRequest) (*CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, req *TerminalRequest) (*TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, req *TerminalRequest) (*WaitForTerminalExitResponse, error)
	KillTerminal(ctx context.Context, req *TerminalRequest) error
	ReleaseTerminal(ctx context.Context, req *TerminalRequest) error
}

// ErrClientGone is returned by calls to the client after it closed the
// connection. It wraps context.Canceled: a turn treats it as a cancellation.
var ErrClientGone = fmt.Errorf("acp: client closed the connection: %w", context.Canceled)

// Options configure a Conn.
type Options struct {
	MaxLineBytes int                     // 0: DefaultMaxLineBytes
	Logger       *zap.Logger             // nil: no logs
	OnFrame      func(Direction, []byte) // sees every frame, both directions
}

// Conn is one ACP connection: it reads requests, dispatches them in order to
// an Agent, and implements Client for the agent's calls back.
type Conn struct {
	stream *LineStream
	log    *zap.Logger

	agent  Agent
	rpc    atomic.Pointer[jsonrpc2.Conn] // set by the read loop before any handler runs
	ctx    context.Context               // cancelled when the client goes away
	outID  atomic.Uint64
	wg     sync.WaitGroup // async handlers (prompt turns)
	mu     sync.Mutex
	flight map[string]context.CancelFunc // async requests by id as sent
}

var _ Client = (*Conn)(nil)

// NewConn prepares a connection over r (client → agent) and w (agent →
// client). Nothing is read until Serve.
func NewConn(r io.Reader, w io.Writer, opts Options) *Conn {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Conn{
		stream: NewLineStream(r, w, opts.MaxLineBytes, opts.OnFrame),
		log:    log,
		flight: make(map[string]context.CancelFunc),
	}
}

// Serve dispatches requests to agent until the input ends or ctx is done,
// then cancels running turns and waits for them to finish (so that what
// they have is persisted) before returning.
func (c *Conn) Serve(ctx context.Context, agent Agent) error {
	c.agent = agent
	var cancel context.CancelFunc
	c.ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	rpc := jsonrpc2.NewConn(c.ctx, c.stream, c, jsonrpc2.SetLogger(zapPrintf{c.log}))
	c.rpc.Store(rpc)
	select {
	case <-rpc.DisconnectNotify():
		c.log.Debug("client closed the connection")
	case <-ctx.Done():
		_ = rpc.Close()
	}
	cancel()
	c.wg.Wait()
	return nil
}

// Handle implements jsonrpc2.Handler. jsonrpc2 calls it on its read loop, so
// requests are handled in arrival order; only methods marked async (the
// prompt turn) leave the loop, because they call back into the client and
// would otherwise deadlock waiting for a response this loop has to read.
func (c *Conn) Handle(_ context.Context, rpc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	c.rpc.Store(rpc)
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif {
		c.handleNotification(req.Method, params)
		return
	}
	id := c.stream.takeID(req.ID)
	m, ok := methods[req.Method]
	if !ok {
		if strings.HasPrefix(req.Method, "_") {
			m, ok = extensionMethod(req.Method), true
		}
	}
	if !ok {
		c.reply(id, req.Method, nil, MethodNotFound(req.Method))
		return
	}
	if !m.async {
		res, err := m.call(c.ctx, c.agent, params)
		c.reply(id, req.Method, res, err)
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	key := string(id)
	c.mu.Lock()
	c.flight[key] = cancel
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.flight, key)
			c.mu.Unlock()
			cancel()
		}()
		res, err := m.call(ctx, c.agent, params)
		c.reply(id, req.Method, res, err)
	}()
}

func (c *Conn) reply(id json.RawMessage, method string, res any, err error) {
	if err != nil {
		c.log.Debug("request failed", zap.String("method", method), zap.Error(err))
		_ = c.stream.writeError(id, err)
		return
	}
	_ = c.stream.writeResult(id, res)
}

func (c *Conn) handleNotification(method string, params json.RawMessage) {
	switch {
	case method == "$/cancel_request":
		var n CancelRequestNotification
		if err := json.Unmarshal(params, &n); err != nil {
			c.log.Debug("bad $/cancel_request", zap.Error(err))
			return
		}
		c.mu.Lock()
		cancel := c.flight[compactJSON(n.RequestID)]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case method == "session/cancel":
		var n CancelNotification
		if err := decodeParams(params, &n); err != nil {
			c.log.Warn("bad session/cancel", zap.Error(err))
			return
		}
		if err := c.agent.Cancel(c.ctx, &n); err != nil {
			c.log.Warn("session/cancel", zap.Error(err))
		}
	case strings.HasPrefix(method, "_"):
		if ext, ok := c.agent.(ExtNotificationHandler); ok {
			ext.HandleExtNotification(c.ctx, method, params)
		}
	default:
		// Notifications never get a response, not even an error.
		c.log.Debug("ignoring unknown notification", zap.String("method", method))
	}
}

func compactJSON(raw json.RawMessage) string {
	var b strings.Builder
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	b.Write(out)
	return b.String()
}

// --- Client: calls from the agent to the client ---

// SessionUpdate sends a session/update notification.
func (c *Conn) SessionUpdate(_ context.Context, n *SessionNotification) error {
	if frame := textChunkFrame(n); frame != nil {
		return c.stream.writeFrame(frame)
	}
	return c.stream.writeNotification("session/update", n)
}

// call makes a request to the client. If ctx ends first, the client is told
// with $/cancel_request so it can drop the request.
func (c *Conn) call(ctx context.Context, method string, params, result any) error {
	rpc := c.rpc.Load()
	if rpc == nil {
		return InternalError("acp: connection is not serving")
	}
	id := c.outID.Add(1)
	err := rpc.Call(ctx, method, params, result, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return ErrClientGone
	}
	if err != nil && ctx.Err() != nil {
		_ = c.stream.writeNotification("$/cancel_request",
			CancelRequestNotification{RequestID: json.RawMessage(strconv.FormatUint(id, 10))})
		return ctx.Err()
	}
	return errorFromWire(err)
}

func (c *Conn) RequestPermission(ctx context.Context, req *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	var res RequestPermissionResponse
	return &res, c.call(ctx, "session/request_permission", req, &res)
}

func (c *Conn) ReadTextFile(ctx context.Context, req *ReadTextFileRequest) (*ReadTextFileResponse, error) {
	var res ReadTextFileResponse
	return &res, c.call(ctx, "fs/read_text_file", req, &res)
}

func (c *Conn) WriteTextFile(ctx context.Context, req *WriteTextFileRequest) (*WriteTextFileResponse, error) {
	// Some clients answer null; that is a success too.
	var res *WriteTextFileResponse
	if err := c.call(ctx, "fs/write_text_file", req, &res); err != nil {
		return nil, err
	}
	if res == nil {
		res = &WriteTextFileResponse{}
	}
	return res, nil
}

func (c *Conn) CreateTerminal(ctx context.Context, req *CreateTerminalRequest) (*CreateTerminalResponse, error) {
	var res CreateTerminalResponse
	return &res, c.call(ctx, "terminal/create", req, &res)
}

func (c *Conn) TerminalOutput(ctx context.Context, req *TerminalRequest) (*TerminalOutputResponse, error) {
	var res TerminalOutputResponse
	return &res, c.call(ctx, "terminal/output", req, &res)
}

func (c *Conn) WaitForTerminalExit(ctx context.Context, req *TerminalRequest) (*WaitForTerminalExitResponse, error) {
	var res WaitForTerminalExitResponse
	return &res, c.call(ctx, "terminal/wait_for_exit", req, &res)
}

func (c *Conn) KillTerminal(ctx context.Context, req *TerminalRequest) error {
	var res json.RawMessage
	return c.call(ctx, "terminal/kill", req, &res)
}

func (c *Conn) ReleaseTerminal(ctx context.Context, req *TerminalRequest) error {
	var res json.RawMessage
	return c.call(ctx, "terminal/release", req, &res)
}

// zapPrintf adapts zap to jsonrpc2's Logger (it reports e.g. responses to
// requests never sent).
type zapPrintf struct{ log *zap.Logger }

func (z zapPrintf) Printf(format string, v ...any) {
	z.log.Sugar().Debugf(strings.TrimSpace(format), v...)
}
