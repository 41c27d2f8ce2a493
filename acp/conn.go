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

// ErrRequestCancelled is the cause of a request context cancelled by the
// client with $/cancel_request (context.Cause tells it apart from the client
// going away). A handler that returns it, or context.Canceled, is answered
// with -32800.
var ErrRequestCancelled = fmt.Errorf("acp: request cancelled by the client: %w", context.Canceled)

// Options configure a Conn.
type Options struct {
	MaxLineBytes int                     // 0: DefaultMaxLineBytes
	Logger       *zap.Logger             // nil: no logs
	OnFrame      func(Direction, []byte) // sees every frame, both directions
}

func (o Options) logger() *zap.Logger {
	if o.Logger == nil {
		return zap.NewNop()
	}
	return o.Logger
}

// Conn is one ACP connection: it reads requests, dispatches them in order to
// an Agent, and implements Client for the agent's calls back.
type Conn struct {
	stream *LineStream
	log    *zap.Logger

	agent   Agent
	rpc     atomic.Pointer[jsonrpc2.Conn] // set by the read loop before any handler runs
	ctx     context.Context               // cancelled when the client goes away
	outID   atomic.Uint64
	wg      sync.WaitGroup // async handlers (prompt turns)
	queue   chan queued    // requests and notifications, in arrival order
	qmu     sync.RWMutex   // guards sends on queue against its closing
	qclosed bool
	// clientCaps is what the client advertised in initialize.
	clientCaps atomic.Pointer[ClientCapabilities]
	mu         sync.Mutex
	flight     map[string]context.CancelCauseFunc // requests not yet answered, by id as sent
	// gone is closed when a write to the client fails (EPIPE: it closed
	// our stdout): nobody reads what we say any more.
	gone     chan struct{}
	goneOnce sync.Once
}

// queued is one message waiting for the dispatcher.
type queued struct {
	method string
	params json.RawMessage
	notif  bool
	id     json.RawMessage
	ctx    context.Context // cancelled by $/cancel_request
}

// queueSize bounds how far the reader runs ahead of a slow request. When it
// is full the reader waits, which is the back-pressure a client sees.
const queueSize = 256

var _ Client = (*Conn)(nil)

// NewConn prepares a connection over r (client → agent) and w (agent →
// client). Nothing is read until Serve.
func NewConn(r io.Reader, w io.Writer, opts Options) *Conn {
	c := &Conn{
		stream: NewLineStream(r, w, opts.MaxLineBytes, opts.OnFrame),
		log:    opts.logger(),
		queue:  make(chan queued, queueSize),
		flight: make(map[string]context.CancelCauseFunc),
		gone:   make(chan struct{}),
	}
	c.stream.onError = c.clientGone
	return c
}

// clientGone ends serving after a failed write to the client, as if its
// input had ended: running turns are cancelled and keep what they streamed.
func (c *Conn) clientGone(err error) {
	c.goneOnce.Do(func() {
		c.log.Info("the client stopped reading (write failed); stopping", zap.Error(err))
		close(c.gone)
	})
}

// Serve dispatches requests to agent until the input ends, a write to the
// client fails (it is gone) or ctx is done,
// then cancels running turns and waits for them to finish (so that what
// they have is persisted) before returning. Requests already read when the
// input ends are still handled: a script piped into stdin gets every answer.
func (c *Conn) Serve(ctx context.Context, agent Agent) error {
	c.agent = agent
	var cancel context.CancelFunc
	c.ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		c.dispatch()
	}()
	rpc := jsonrpc2.NewConn(c.ctx, c.stream, c, jsonrpc2.SetLogger(zapPrintf{c.log}))
	c.rpc.Store(rpc)
	select {
	case <-rpc.DisconnectNotify():
		c.log.Debug("client closed the connection")
	case <-ctx.Done():
		cancel() // stopping: queued requests are answered as cancelled
		_ = rpc.Close()
	case <-c.gone:
		cancel() // nobody reads the answers: running turns stop now
		_ = rpc.Close()
	}
	c.qmu.Lock()
	c.qclosed = true
	close(c.queue)
	c.qmu.Unlock()
	<-dispatched
	cancel()
	c.wg.Wait()
	return nil
}

// Handle implements jsonrpc2.Handler. jsonrpc2 calls it on its read loop; it
// only queues the message, so the loop stays free to read responses to the
// agent's own requests and $/cancel_request while a request runs. The
// dispatcher (dispatch) handles the queue strictly in arrival order.
func (c *Conn) Handle(_ context.Context, rpc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	// jsonrpc2's read loop is not ours to end: a bug here is logged.
	_ = Safely(c.log, "reading "+req.Method, func() error { c.enqueue(rpc, req); return nil })
}

// enqueue is Handle's work.
func (c *Conn) enqueue(rpc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	c.rpc.Store(rpc)
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif && req.Method == "$/cancel_request" {
		c.cancelRequest(params)
		return
	}
	c.qmu.RLock()
	defer c.qmu.RUnlock()
	if c.qclosed {
		return // shutting down; the reader may still deliver a line or two
	}
	q := queued{method: req.Method, params: params, notif: req.Notif, ctx: c.ctx}
	if !req.Notif {
		q.id = c.stream.takeID(req.ID)
		// Registered now so that a $/cancel_request can reach a request
		// that is still waiting in the queue.
		ctx, cancel := context.WithCancelCause(c.ctx)
		q.ctx = ctx
		c.mu.Lock()
		c.flight[string(q.id)] = cancel
		c.mu.Unlock()
	}
	c.queue <- q
}

// dispatch handles queued messages in order. Methods marked async (the
// prompt turn) leave the queue on their own goroutine because they call back
// into the client and run for long; every other request is answered, and its
// follow-up notifications (AfterResponse) written, before the next message
// is looked at. That is the ordering guarantee clients rely on.
func (c *Conn) dispatch() {
	for q := range c.queue {
		if q.notif {
			_ = Safely(c.log, q.method, func() error { c.handleNotification(q.method, q.params); return nil })
			continue
		}
		m, ok := methods[q.method]
		if !ok && strings.HasPrefix(q.method, "_") {
			m, ok = extensionMethod(q.method), true
		}
		switch {
		case !ok:
			c.finish(q, nil, MethodNotFound(q.method), nil)
		case q.ctx.Err() != nil:
			c.finish(q, nil, q.ctx.Err(), nil)
		case m.async:
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.run(q, m)
			}()
		default:
			c.run(q, m)
		}
	}
}

// run calls the method, answers, then runs the hooks registered with
// AfterResponse.
func (c *Conn) run(q queued, m method) {
	hooks := new(afterHooks)
	if q.method == "initialize" {
		c.noteInitialize(q.params)
	}
	var res any
	err := Safely(c.log, q.method, func() (err error) {
		res, err = m.call(context.WithValue(q.ctx, afterKey{}, hooks), c.agent, q.params)
		return err
	})
	c.finish(q, res, err, hooks)
}

func (c *Conn) finish(q queued, res any, err error, hooks *afterHooks) {
	c.mu.Lock()
	cancel := c.flight[string(q.id)]
	delete(c.flight, string(q.id))
	c.mu.Unlock()
	c.reply(q.id, q.method, res, err)
	if cancel != nil {
		cancel(nil)
	}
	if hooks != nil {
		for _, fn := range hooks.take() {
			_ = Safely(c.log, "the work after "+q.method, func() error { fn(); return nil })
		}
	}
}

func (c *Conn) cancelRequest(params json.RawMessage) {
	if err := cancelInFlight(&c.mu, c.flight, params); err != nil {
		c.log.Debug("bad $/cancel_request", zap.Error(err))
	}
}

// cancelInFlight cancels the request a $/cancel_request names, if it is
// still in flight (flight is guarded by mu).
func cancelInFlight(mu *sync.Mutex, flight map[string]context.CancelCauseFunc, params json.RawMessage) error {
	var n CancelRequestNotification
	if err := json.Unmarshal(params, &n); err != nil {
		return err
	}
	mu.Lock()
	cancel := flight[compactJSON(n.RequestID)]
	mu.Unlock()
	if cancel != nil {
		cancel(ErrRequestCancelled)
	}
	return nil
}

// afterHooks collects what a handler wants done once its response is
// written.
type afterHooks struct {
	mu  sync.Mutex
	fns []func()
}

func (h *afterHooks) take() []func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	fns := h.fns
	h.fns = nil
	return fns
}

type afterKey struct{}

// AfterResponse runs fn right after the response (result or error) to the
// request being handled in ctx is written; for requests handled in order,
// before the next queued message is handled.
// Agents use it for notifications that must follow a response, such as
// available_commands_update after session/new (a client only knows the
// session once it has the response). Outside a request (tests calling the
// agent directly) fn runs at once.
func AfterResponse(ctx context.Context, fn func()) {
	h, _ := ctx.Value(afterKey{}).(*afterHooks)
	if h == nil {
		fn()
		return
	}
	h.mu.Lock()
	h.fns = append(h.fns, fn)
	h.mu.Unlock()
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
	if err := c.checkUpdate(n); err != nil {
		return err
	}
	bp := framePool.Get().(*[]byte)
	frame, err := appendUpdateFrame((*bp)[:0], n)
	if err != nil {
		framePool.Put(bp)
		return fmt.Errorf("acp: encode frame: %w", err)
	}
	err = c.stream.writeFrame(frame)
	if cap(frame) <= maxPooledFrame {
		*bp = frame[:0]
		framePool.Put(bp)
	}
	return err
}

// checkUpdate applies checkUpdateKind to an update outside the typed
// kinds (SessionUpdate.Other); typed updates always pass.
func (c *Conn) checkUpdate(n *SessionNotification) error {
	if n.Update.Other == nil {
		return nil
	}
	return c.checkUpdateKind(n.Update.Kind())
}

// call makes a request to the client. If ctx ends first, the client is told
// with $/cancel_request so it can drop the request.
func (c *Conn) call(ctx context.Context, method string, params, result any) error {
	rpc := c.rpc.Load()
	if rpc == nil {
		return InternalError("The ACP connection is not serving.")
	}
	if err := c.checkAdvertised(method); err != nil {
		return err
	}
	return callPeer(ctx, rpc, c.stream, &c.outID, method, params, result, ErrClientGone)
}

// callPeer sends a request with the next id of ids and decodes its result;
// gone is returned once the connection is closed. If ctx ends first, the
// other side is told with $/cancel_request and ctx's error returned; an
// error answer is returned as *Error.
func callPeer(ctx context.Context, rpc *jsonrpc2.Conn, s *LineStream, ids *atomic.Uint64, method string, params, result any, gone error) error {
	id := ids.Add(1)
	err := rpc.Call(ctx, method, params, result, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jsonrpc2.ErrClosed):
		return gone
	case ctx.Err() != nil:
		_ = s.writeNotification("$/cancel_request",
			CancelRequestNotification{RequestID: json.RawMessage(strconv.FormatUint(id, 10))})
		return ctx.Err()
	}
	return errorFromWire(err)
}

// callFor makes call and decodes its result into a new R.
func callFor[R any](ctx context.Context, call func(context.Context, string, any, any) error, method string, req any) (*R, error) {
	res := new(R)
	return res, call(ctx, method, req, res)
}

func (c *Conn) RequestPermission(ctx context.Context, req *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	return callFor[RequestPermissionResponse](ctx, c.call, "session/request_permission", req)
}

func (c *Conn) ReadTextFile(ctx context.Context, req *ReadTextFileRequest) (*ReadTextFileResponse, error) {
	return callFor[ReadTextFileResponse](ctx, c.call, "fs/read_text_file", req)
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
	return callFor[CreateTerminalResponse](ctx, c.call, "terminal/create", req)
}

func (c *Conn) TerminalOutput(ctx context.Context, req *TerminalRequest) (*TerminalOutputResponse, error) {
	return callFor[TerminalOutputResponse](ctx, c.call, "terminal/output", req)
}

func (c *Conn) WaitForTerminalExit(ctx context.Context, req *TerminalRequest) (*WaitForTerminalExitResponse, error) {
	return callFor[WaitForTerminalExitResponse](ctx, c.call, "terminal/wait_for_exit", req)
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
