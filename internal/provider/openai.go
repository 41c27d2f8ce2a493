package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/crow-acp/crow-acp/internal/secret"
)

// DefaultBaseURL is used when OpenAIConfig.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultIdleTimeout is used when OpenAIConfig.IdleTimeout is zero.
const DefaultIdleTimeout = 120 * time.Second

// Defaults of the bounds on one model request (OpenAIConfig), generous for
// any real reply and small enough that a model that never stops cannot
// exhaust memory, the disk, or a CI job's time.
const (
	// DefaultTimeout bounds a whole request: a slow local model writing a
	// long reply takes minutes, not ten. Keep-alive comments do not extend it.
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxReplyBytes bounds the text and reasoning of one reply
	// (about 1M tokens; models stop at 128k).
	DefaultMaxReplyBytes = 4 << 20
	// DefaultMaxArgumentBytes bounds one tool call's arguments (a whole
	// file written in one call fits).
	DefaultMaxArgumentBytes = 4 << 20
	// DefaultMaxEventBytes bounds one server-sent event (one chunk).
	DefaultMaxEventBytes = 4 << 20
)

// Errors a Stream can wrap, for the caller's retry policy. All of them leave
// the partial Result in place.
var (
	// ErrIdleTimeout: the endpoint sent no bytes for the idle timeout.
	ErrIdleTimeout = errors.New("model endpoint sent nothing for too long")
	// ErrIncompleteStream: the stream broke off (connection cut, error event,
	// or end of body without a finish_reason).
	ErrIncompleteStream = errors.New("model stream ended before the completion finished")
	// ErrMalformedChunk: a chunk was not valid chat-completion JSON.
	ErrMalformedChunk = errors.New("malformed chunk from model endpoint")
	// ErrUnreachable: the request got no response at all (connection
	// refused or reset, DNS, TLS).
	ErrUnreachable = errors.New("could not reach the model endpoint")
)

// OpenAIConfig configures an OpenAIClient. Only what is set here is used:
// the OPENAI_* environment variables are never read.
type OpenAIConfig struct {
	// BaseURL of an OpenAI-compatible API, including /v1 (for example
	// http://127.0.0.1:11434/v1). Empty: DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". When empty no
	// Authorization header is sent, which is what local servers (Ollama,
	// llama.cpp, vLLM without --api-key) expect.
	APIKey string
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer).
	Headers map[string]string
	// HTTPClient to use; nil: a client of our own (keep-alive pool, no
	// overall timeout).
	HTTPClient *http.Client
	// Timeout bounds a whole request including its stream, whatever the
	// endpoint sends meanwhile (keep-alive comments included).
	// 0: DefaultTimeout; negative: no limit.
	Timeout time.Duration
	// MaxReplyBytes, MaxArgumentBytes and MaxEventBytes bound the text and
	// reasoning of one reply, the arguments of one tool call and one
	// server-sent event; past one, the stream ends with a *LimitError and
	// the Result keeps what was streamed. 0: the Default of each.
	MaxReplyBytes, MaxArgumentBytes, MaxEventBytes int
	// IdleTimeout aborts a request when the endpoint sends no bytes for
	// this long, while waiting for the response headers or mid-stream.
	// 0: DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration
}

// OpenAIClient streams chat completions from an OpenAI-compatible endpoint.
// It is safe for concurrent use.
type OpenAIClient struct {
	chat poster                 // chat/completions (post.go)
	opts []option.RequestOption // openai-go's, for the Responses API (responses.go)
	// redactor removes every configured secret (the key, header values, a
	// password in the base URL) from what the endpoint or the transport
	// echoes.
	redactor    *secret.Redactor
	timeout     time.Duration
	idleTimeout time.Duration
	limits      outputLimits

	// What the endpoint refused (see Stream).
	mu                    sync.Mutex
	refusesStreamOptions  bool
	wantsCompletionTokens map[string]bool // by model

	signatures thoughtSignatures // Gemini 3's, by tool-call id (signature.go)
}

var _ Client = (*OpenAIClient)(nil)

// NewOpenAI returns a client for cfg.
//
// The Responses API's openai-go options are explicit instead of
// openai.NewClient's, which would read OPENAI_BASE_URL, OPENAI_API_KEY,
// OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS from the
// environment. Neither path retries: retrying is the agent's policy. The
// key is sent as our own Authorization header.
func NewOpenAI(cfg OpenAIConfig) *OpenAIClient {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		var rt http.RoundTripper = http.DefaultTransport
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			rt = t.Clone()
		}
		hc = &http.Client{Transport: rt}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	header := cfg.header()
	for k, v := range header {
		opts = append(opts, option.WithHeader(k, v[0]))
	}
	idle := cfg.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &OpenAIClient{
		chat:        newPoster(base, hc, header),
		opts:        opts,
		redactor:    secret.NewRedactor(configSecrets(cfg, base)...),
		timeout:     timeout,
		idleTimeout: idle,
		limits: outputLimits{
			reply: orDefault(cfg.MaxReplyBytes, DefaultMaxReplyBytes),
			args:  orDefault(cfg.MaxArgumentBytes, DefaultMaxArgumentBytes),
			event: orDefault(cfg.MaxEventBytes, DefaultMaxEventBytes),
		},
	}
}

// Stream implements Client.
//
// A request the endpoint refuses with 400 because of a parameter it does not
// take (stream_options on some servers and older Azure API versions;
// max_tokens on OpenAI's reasoning models) is sent once more without it,
// and the refusal is remembered for the client's lifetime (the endpoint's
// for stream_options, the model's for max_tokens).
func (c *OpenAIClient) Stream(ctx context.Context, req Request, onEvent func(Event) error) (*Result, error) {
	if onEvent == nil {
		onEvent = func(Event) error { return nil }
	}
	shape := c.shape(req)
	for {
		res, err := c.stream(ctx, req, shape, onEvent)
		// learn changes one setting from its default each time, so this
		// retries at most once per parameter.
		next, ok := c.learn(req, shape, err)
		if !ok {
			return res, err
		}
		shape = next
	}
}

// shape is req's body shape with what this endpoint refused before.
func (c *OpenAIClient) shape(req Request) bodyShape {
	s := shapeFor(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	s.noStreamOptions = c.refusesStreamOptions
	s.maxCompletionTokens = s.maxCompletionTokens || c.wantsCompletionTokens[req.Model]
	return s
}

// learn reads a 400 for a parameter the endpoint does not take, remembers
// it and returns the shape to try again with.
func (c *OpenAIClient) learn(req Request, s bodyShape, err error) (bodyShape, bool) {
	var api *APIError
	if !errors.As(err, &api) || api.StatusCode != http.StatusBadRequest {
		return s, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch msg := api.Message; {
	case !s.noStreamOptions && strings.Contains(msg, "stream_options"):
		// "Unknown parameter: 'stream_options'." (OpenAI-shaped gateways),
		// "Unrecognized request argument supplied: stream_options" (Azure).
		c.refusesStreamOptions = true
		s.noStreamOptions = true
	case req.MaxTokens > 0 && !s.maxCompletionTokens && strings.Contains(msg, "max_tokens") && strings.Contains(msg, "max_completion_tokens"):
		if c.wantsCompletionTokens == nil {
			c.wantsCompletionTokens = make(map[string]bool)
		}
		c.wantsCompletionTokens[req.Model] = true
		s.maxCompletionTokens = true
	default:
		return s, false
	}
	return s, true
}

// stream makes one request with the body written in shape.
func (c *OpenAIClient) stream(ctx context.Context, req Request, shape bodyShape, onEvent func(Event) error) (*Result, error) {
	var p Parser
	if inlineThinkFor(req.Model, req.InlineThink) == InlineThinkOpen {
		p.startInThink()
	}
	if err := ctx.Err(); err != nil {
		return p.Finish(), fmt.Errorf("streaming: %w", err)
	}
	shape.signatures = c.signatures.forRequest(req)
	body, err := encodeBody(req, shape)
	if err != nil {
		return p.Finish(), err
	}

	sctx, w, done := c.watchRequest(ctx)
	defer done()

	// What openai-go's NewStreaming does, with our own body (see chatBody
	// why; payload.send puts it in place of the empty body) and the chunks
	// decoded as our lean Chunk (see there why).
	raw, err := c.chat.post(sctx, "chat/completions", w.middleware(c.redactor), body.send())
	if err == nil {
		err = c.readStream(c.decoder(raw), &p, w, onEvent)
	}
	res := p.Finish()
	c.signatures.remember(res.ToolCalls)
	if err != nil {
		var stop abandoned
		if errors.As(err, &stop) {
			return res, stop.err
		}
	}
	if err := c.streamError(ctx, sctx, w, p.Chunks(), err); err != nil {
		return res, err
	}
	if res.FinishReason == "" {
		return res, fmt.Errorf("streaming: %w: the body ended without a finish_reason after %d chunks", ErrIncompleteStream, p.Chunks())
	}
	return res, nil
}

// abandoned carries the error of an onEvent that stopped the stream, which
// is returned as it is.
type abandoned struct{ err error }

func (a abandoned) Error() string { return a.err.Error() }

// readStream feeds the stream's chunks to p and their events to onEvent,
// until [DONE], the end of the body or an error.
func (c *OpenAIClient) readStream(dec ssestream.Decoder, p *Parser, w *watch, onEvent func(Event) error) error {
	if dec == nil {
		return fmt.Errorf("%w: no response body", ErrIncompleteStream)
	}
	defer dec.Close()
	var out outputSize
	for dec.Next() {
		data := dec.Event().Data
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			return nil
		}
		chunk, err := DecodeChunk(data)
		if err != nil {
			return &chunkError{err: err}
		}
		// OpenRouter reports a failure mid-stream as a chunk with an error
		// object and finish_reason "error" (openrouter.ai/docs/api-reference/streaming,
		// "Handling Errors During Streaming"); either alone ends the stream.
		if len(chunk.Error) > 0 || finishedWithError(chunk) {
			return &streamErrorEvent{data: bytes.Clone(data)}
		}
		for _, ev := range p.Add(chunk) {
			out.add(ev)
			if err := onEvent(ev); err != nil {
				return abandoned{err}
			}
		}
		out.calls = len(p.calls)
		// Checked after the chunk is shown: the Result keeps exactly what
		// the client saw, at most one event past the limit.
		if err := c.limits.check(out); err != nil {
			return err
		}
		w.kick() // a slow onEvent is not the endpoint's idleness
	}
	return dec.Err()
}

func finishedWithError(c Chunk) bool {
	for i := range c.Choices {
		if c.Choices[i].Index == 0 && c.Choices[i].FinishReason == "error" {
			return true
		}
	}
	return false
}

// chunkError is a chunk that is not chat-completion JSON.
type chunkError struct{ err error }

func (e *chunkError) Error() string { return e.err.Error() }
func (e *chunkError) Unwrap() error { return e.err }

// streamErrorEvent is an error the endpoint reported mid-stream.
type streamErrorEvent struct{ data []byte }

func (e *streamErrorEvent) Error() string { return "error event: " + string(e.data) }

// streamError classifies what reading the stream reported.
func (c *OpenAIClient) streamError(ctx, sctx context.Context, w *watch, chunks int, err error) error {
	if err == nil {
		return nil
	}
	// The caller's cancellation wins over everything it caused.
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			return fmt.Errorf("streaming: %w (%w)", ctx.Err(), cause)
		}
		return fmt.Errorf("streaming: %w", ctx.Err())
	}
	if sctx.Err() != nil {
		switch cause := context.Cause(sctx).(type) {
		case errIdle:
			return &TimeoutError{Idle: true, After: cause.d}
		case errTimeout:
			return &TimeoutError{After: cause.d}
		}
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var limit *LimitError
	if errors.As(err, &limit) {
		return fmt.Errorf("streaming: %w", limit)
	}
	var sdkErr *responses.Error
	if errors.As(err, &sdkErr) { // not expected: the middleware answers first
		return c.fromSDKError(sdkErr)
	}
	var streamErr *streamErrorEvent
	if errors.As(err, &streamErr) {
		if ov := ParseOverflow(streamErr.data); ov != nil {
			return &overflowEventError{overflow: ov, message: c.redact(errorMessage(streamErr.data))}
		}
		return fmt.Errorf("streaming: %w: the endpoint sent an error event: %s", ErrIncompleteStream, c.redact(errorMessage(streamErr.data)))
	}
	if !w.gotResponse() {
		// Connection refused, DNS, TLS...: the request never got an answer.
		return c.redacted(fmt.Errorf("streaming: %w: %w", ErrUnreachable, err))
	}
	if rerr := w.readError(); rerr != nil {
		return c.redacted(fmt.Errorf("streaming: %w: reading the body after %d chunks: %w", ErrIncompleteStream, chunks, rerr))
	}
	var bad *chunkError
	if errors.As(err, &bad) {
		return c.redacted(fmt.Errorf("streaming: %w (after %d good chunks): %w", ErrMalformedChunk, chunks, bad.err))
	}
	return c.redacted(fmt.Errorf("streaming: %w after %d chunks: %w", ErrIncompleteStream, chunks, err))
}

func (c *OpenAIClient) fromSDKError(e *responses.Error) *APIError {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	ae := &APIError{StatusCode: e.StatusCode, Message: c.redact(msg)}
	if e.Response != nil {
		ae.RetryAfter = c.redact(e.Response.Header.Get("Retry-After"))
	}
	return ae
}

// redacted keeps err's chain for errors.Is/As but scrubs the API key from
// its text.
func (c *OpenAIClient) redacted(err error) error {
	msg := err.Error()
	if clean := c.redact(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact removes the configured secrets from text that came from the
// endpoint or the transport, in case either echoes one.
func (c *OpenAIClient) redact(s string) string { return c.redactor.Redact(s) }

// configSecrets are the secrets of cfg: the key, every header value (a
// provider's auth may be any header) and a password in the base URL.
func configSecrets(cfg OpenAIConfig, base string) []string {
	out := []string{cfg.APIKey, secret.URLPassword(base)}
	for _, v := range cfg.Headers {
		out = append(out, v)
	}
	return out
}

// TimeoutError is a model request the client stopped at one of its own
// timeouts. It matches ErrIdleTimeout (Idle) or context.DeadlineExceeded.
type TimeoutError struct {
	Idle  bool          // the endpoint sent no bytes for After; else the request took longer than After
	After time.Duration // the timeout
}

func (e *TimeoutError) Error() string {
	if e.Idle {
		return fmt.Sprintf("streaming: %v: no bytes for %s", ErrIdleTimeout, e.After)
	}
	return fmt.Sprintf("streaming: request took longer than the %s timeout", e.After)
}

func (e *TimeoutError) Is(target error) bool {
	if e.Idle {
		return target == ErrIdleTimeout
	}
	return target == context.DeadlineExceeded
}

type errIdle struct{ d time.Duration }

func (e errIdle) Error() string { return fmt.Sprintf("idle for %s", e.d) }

type errTimeout struct{ d time.Duration }

func (e errTimeout) Error() string { return fmt.Sprintf("timeout %s", e.d) }

// watch sits between openai-go and the HTTP client for one request: it turns
// error statuses into *APIError (openai-go loses the status when the body is
// not OpenAI's error shape, e.g. Ollama's {"error":"..."}), re-arms the idle
// timer on every byte, and remembers transport read errors.
// watchRequest gives a model request its own context, which carries the
// idle and overall timeouts as causes so they can be told apart from the
// caller's cancellation, and the watch that resets the idle timer. done
// releases both.
func (c *OpenAIClient) watchRequest(ctx context.Context) (sctx context.Context, w *watch, done func()) {
	sctx, cancel := context.WithCancelCause(ctx)
	stop := context.CancelFunc(func() {})
	if c.timeout > 0 {
		sctx, stop = context.WithTimeoutCause(sctx, c.timeout, errTimeout{c.timeout})
	}
	w = &watch{}
	if c.idleTimeout > 0 {
		idle := c.idleTimeout
		w.timer = time.AfterFunc(idle, func() { cancel(errIdle{idle}) })
		w.idle = idle
	}
	return sctx, w, func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		stop()
		cancel(nil)
	}
}

type watch struct {
	timer *time.Timer
	idle  time.Duration

	mu      sync.Mutex
	resp    bool
	readErr error
}

const maxErrorBody = 64 << 10

func (w *watch) middleware(redactor *secret.Redactor) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err != nil {
			return resp, err
		}
		w.mu.Lock()
		w.resp = true
		w.mu.Unlock()
		w.kick()
		if resp.StatusCode >= 400 {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			msg := errorMessage(body)
			if msg == "" {
				msg = http.StatusText(resp.StatusCode)
			}
			return nil, &APIError{
				StatusCode: resp.StatusCode,
				Message:    redactor.Redact(msg),
				RetryAfter: redactor.Redact(resp.Header.Get("Retry-After")),
				Overflow:   ParseOverflow(body),
			}
		}
		resp.Body = &watchedBody{rc: resp.Body, w: w}
		return resp, nil
	}
}

func (w *watch) kick() {
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

func (w *watch) gotResponse() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resp
}

func (w *watch) readError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.readErr
}

type watchedBody struct {
	rc io.ReadCloser
	w  *watch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.kick()
	}
	if err != nil && err != io.EOF {
		b.w.mu.Lock()
		if b.w.readErr == nil {
			b.w.readErr = err
		}
		b.w.mu.Unlock()
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

// errorMessage digs the human-readable message out of an error body:
// OpenAI's {"error":{"message":...}}, {"error":"..."} (Ollama, many proxies),
// {"message":"..."} or {"detail":"..."}; otherwise the text itself, trimmed.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		if len(v.Error) > 0 {
			var s string
			if json.Unmarshal(v.Error, &s) == nil && s != "" {
				return s
			}
			var o struct {
				Message string `json:"message"`
				Code    any    `json:"code"`
			}
			if json.Unmarshal(v.Error, &o) == nil && o.Message != "" {
				return o.Message
			}
		}
		if v.Message != "" {
			return v.Message
		}
		var s string
		if len(v.Detail) > 0 && json.Unmarshal(v.Detail, &s) == nil && s != "" {
			return s
		}
	}
	return abbreviate(strings.TrimSpace(string(body)), 500)
}

// textWithParts is Content followed by any text parts; the roles other than
// user take text only.
func textWithParts(m Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Type == "text" && p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// argumentsForHistory sends a call's arguments back as they were streamed
// when they are a JSON object, and "{}" otherwise: several servers (Ollama,
// vLLM) parse the arguments of earlier calls and would reject every later
// request of the session because of one bad call. The tool result already
// told the model what was wrong.
func argumentsForHistory(args string) string {
	a, errText := checkArguments(args)
	if errText != "" {
		return "{}"
	}
	return a
}
