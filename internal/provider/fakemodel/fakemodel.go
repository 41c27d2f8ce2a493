// Package fakemodel is a scripted OpenAI-compatible chat-completions server on
// the loopback interface, for tests, the demo and benchmarks.
//
// Each POST /v1/chat/completions is answered with the next queued Reply (or
// the fallback), streamed as real OpenAI server-sent events when the request
// asks for "stream": true, as one chat.completion object otherwise.
// GET /v1/models lists one model, "fake-model".
//
// A streamed reply is a sequence of chunks: the reasoning deltas, the text
// deltas, the tool-call deltas, one chunk with finish_reason and one usage
// chunk with empty choices, then "data: [DONE]". The first chunk carries
// role "assistant". StallAfter and CutAfter count these chunks.
package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// ModelID is the model GET /v1/models lists, and the model a reply names when
// the request names none.
const ModelID = "fake-model"

// created is the fixed "created" timestamp of every reply, for stable output.
const created = 1700000000

// maxStall bounds a StallAfter pause when the client never disconnects.
const maxStall = 30 * time.Second

// ToolCall is a tool call the fake model makes.
type ToolCall struct {
	ID        string `json:"id,omitempty"` // empty: no id is sent (the client must make one up)
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// Usage is the token usage reported in the final chunk.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails reports cached prompt tokens as OpenAI does.
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails is OpenAI's usage.prompt_tokens_details.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// Reply scripts the answer to one chat-completions request.
type Reply struct {
	Status     int               `json:"status,omitempty"`      // non-200: an error response with an OpenAI-style JSON body (message: Text, or the status text)
	Headers    map[string]string `json:"headers,omitempty"`     // response headers, e.g. {"Retry-After":"1"}
	Text       string            `json:"text,omitempty"`        // the assistant's content
	Reasoning  string            `json:"reasoning,omitempty"`   // streamed as delta.reasoning_content before the text
	Chunks     int               `json:"chunks,omitempty"`      // split Text into this many deltas (0: one delta per word, keeping spaces)
	ToolCalls  []ToolCall        `json:"tool_calls,omitempty"`  // id+name in the first delta of each call, arguments in up to 3 more
	Finish     string            `json:"finish,omitempty"`      // default "tool_calls" if ToolCalls else "stop"
	Usage      *Usage            `json:"usage,omitempty"`       // default: an estimate (bytes/4) of request and reply
	DelayMS    int               `json:"delay_ms,omitempty"`    // pause before each chunk
	StallAfter int               `json:"stall_after,omitempty"` // after N chunks, send nothing until the client disconnects (or 30s)
	CutAfter   int               `json:"cut_after,omitempty"`   // after N chunks, drop the connection without [DONE]
	RawSSE     string            `json:"raw_sse,omitempty"`     // written verbatim as a text/event-stream body
	SSE        string            `json:"sse,omitempty"`         // names a raw body UseSSE fills RawSSE from (a corpus fixture's -- sse NAME -- section)
	ErrorBody  string            `json:"error_body,omitempty"`  // with Status: the error body verbatim, as application/json (a provider's own error shape)
	Endless    string            `json:"endless,omitempty"`     // never finish, until the client disconnects: see Endless*
}

// Server is a running fake endpoint. Its methods are safe for concurrent use.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	url  string
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	rules    []Rule
	queue    []Reply
	fallback Reply
	requests []json.RawMessage
	headers  []http.Header
	served   int
	key      string // when set, requests without "Bearer key" get 401

	active atomic.Int32 // chat handlers running

	discovery     Discovery         // how windows are told (discovery.go); under mu
	discoveryHits atomic.Int32      // requests to the window endpoints
	callReasoning map[string]string // Responses API: call id -> the reasoning item before it (responses.go); under mu
}

// Start starts a server on 127.0.0.1 on a free port. It panics if it cannot
// listen, like httptest.NewServer.
func Start() *Server {
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	return s
}

// Listen starts a server on addr, which must be a loopback address
// ("127.0.0.1:0", "[::1]:8080", "localhost:9000").
func Listen(addr string) (*Server, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakemodel: %w", err)
	}
	s := &Server{
		ln:       ln,
		url:      "http://" + ln.Addr().String() + "/v1",
		done:     make(chan struct{}),
		fallback: Reply{Text: "ok"},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	s.discoveryRoutes(mux)
	s.responsesRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// CheckLoopback reports an error unless addr's host is a loopback IP or
// "localhost".
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("fakemodel: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("fakemodel: refusing to listen on %q: not a loopback address", addr)
}

// URL is the base URL, ending in /v1 (usable as OPENAI_BASE_URL).
func (s *Server) URL() string { return s.url }

// Enqueue adds replies, served in FIFO order, one per chat request.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, r...)
	s.mu.Unlock()
}

// SetFallback sets the reply served when the queue is empty (initially
// Text "ok").
func (s *Server) SetFallback(r Reply) {
	s.mu.Lock()
	s.fallback = r
	s.mu.Unlock()
}

// Pending reports how many queued replies have not been served yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the body of every chat request received, in order, byte
// for byte.
func (s *Server) Requests() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.requests...)
}

// Headers returns the headers of every chat request, in the order of
// Requests.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]http.Header, len(s.headers))
	for i, h := range s.headers {
		out[i] = h.Clone()
	}
	return out
}

// Close stops the server, ending stalled replies and open connections.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		_ = s.srv.Close()
	})
}

// RequireKey makes the server answer 401, as OpenAI does, to any request
// that does not carry "Authorization: Bearer key". "" accepts every request.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
}

// refused answers 401 when the request lacks the required key.
func (s *Server) refused(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key == "" || r.Header.Get("Authorization") == "Bearer "+key {
		return false
	}
	writeError(w, http.StatusUnauthorized, "Incorrect API key provided")
	return true
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if s.refused(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   s.modelEntries(),
	})
}

// request is the part of a chat request the server looks at.
type request struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
}

// accept decodes body into req and applies the provider's request rules.
// A request it refuses (malformed, or breaking a rule: answered as the provider
// does) is recorded but takes no reply: the client's corrected retry gets
// the reply the script meant for it.
func (s *Server) accept(w http.ResponseWriter, r *http.Request, body []byte, req any) bool {
	if err := json.Unmarshal(body, req); err != nil {
		s.record(body, r.Header)
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	if rej := s.check(body, r.Header); rej != nil {
		s.record(body, r.Header)
		rej.write(w)
		return false
	}
	return true
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error())
		return
	}
	if s.refused(w, r) {
		s.record(body, r.Header)
		return
	}
	var req request
	if !s.accept(w, r, body, &req) {
		return
	}
	reply, n := s.next(body, r.Header)
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.ErrorBody != "" {
			writeRawError(w, reply.Status, reply.ErrorBody)
			return
		}
		msg := reply.Text
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, msg)
		return
	}
	if reply.Endless != "" {
		s.endless(w, r, reply.Endless)
		return
	}
	if reply.RawSSE != "" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = io.WriteString(w, reply.RawSSE)
		return
	}
	model := req.Model
	if model == "" {
		model = ModelID
	}
	id := "chatcmpl-fake-" + strconv.Itoa(n)
	usage := reply.usage(len(body))
	if !req.Stream {
		writeCompletion(w, id, model, reply, usage)
		return
	}
	s.stream(w, r, id, model, reply, usage)
}

func (s *Server) record(body []byte, h http.Header) {
	s.mu.Lock()
	s.requests = append(s.requests, json.RawMessage(body))
	s.headers = append(s.headers, h.Clone())
	s.mu.Unlock()
}

// next records a request and takes the reply for it.
func (s *Server) next(body []byte, h http.Header) (Reply, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, json.RawMessage(body))
	s.headers = append(s.headers, h.Clone())
	s.served++
	if len(s.queue) == 0 {
		return s.fallback, s.served
	}
	r := s.queue[0]
	s.queue = s.queue[1:]
	return r, s.served
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, id, model string, reply Reply, usage Usage) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()

	chunks := reply.chunks(id, model, usage)
	ctx := r.Context()
	var buf bytes.Buffer
	for i := 0; ; i++ {
		if reply.StallAfter > 0 && i == reply.StallAfter {
			select {
			case <-ctx.Done():
			case <-s.done:
			case <-time.After(maxStall):
			}
			return
		}
		if reply.CutAfter > 0 && i == reply.CutAfter {
			_ = rc.Flush()
			if conn, _, err := rc.Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		if reply.DelayMS > 0 {
			t := time.NewTimer(time.Duration(reply.DelayMS) * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		buf.Reset()
		if i < len(chunks) {
			buf.WriteString("data: ")
			if err := json.NewEncoder(&buf).Encode(chunks[i]); err != nil {
				return
			}
			buf.Truncate(buf.Len() - 1) // Encode's newline
			buf.WriteString("\n\n")
		} else {
			buf.WriteString("data: [DONE]\n\n")
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if i >= len(chunks) {
			return
		}
	}
}

// Wire shapes of a streamed chunk, as OpenAI sends them.
type chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *Usage   `json:"usage"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

func (r Reply) finish() string {
	if r.Finish != "" {
		return r.Finish
	}
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// usage is the scripted usage, or an estimate of a quarter token per byte.
func (r Reply) usage(requestBytes int) Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	out := len(r.Text) + len(r.Reasoning)
	for _, tc := range r.ToolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	u := Usage{PromptTokens: (requestBytes + 3) / 4, CompletionTokens: (out + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func (r Reply) chunks(id, model string, usage Usage) []chunk {
	var out []chunk
	add := func(d delta, finish *string) {
		out = append(out, chunk{
			ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []choice{{Index: 0, Delta: d, FinishReason: finish}},
		})
	}
	for _, piece := range splitWords(r.Reasoning) {
		add(delta{ReasoningContent: piece}, nil)
	}
	for _, piece := range r.textPieces() {
		add(delta{Content: &piece}, nil)
	}
	for i, tc := range r.ToolCalls {
		add(delta{ToolCalls: []toolCallDelta{{
			Index: i, ID: tc.ID, Type: "function",
			Function: functionDelta{Name: tc.Name},
		}}}, nil)
		for _, piece := range splitN(tc.Arguments, 3) {
			add(delta{ToolCalls: []toolCallDelta{{Index: i, Function: functionDelta{Arguments: piece}}}}, nil)
		}
	}
	finish := r.finish()
	add(delta{}, &finish)
	out[0].Choices[0].Delta.Role = "assistant"
	out = append(out, chunk{
		ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		Choices: []choice{}, Usage: &usage,
	})
	return out
}

// textPieces is Text cut into its deltas: Chunks pieces, or one a word.
func (r Reply) textPieces() []string {
	if r.Chunks > 0 {
		return splitN(r.Text, r.Chunks)
	}
	return splitWords(r.Text)
}

// splitWords cuts s after each run of whitespace that a word follows, so
// "a b  c" is "a ", "b  ", "c"; leading whitespace stays with the first word.
// Nothing is lost: the pieces join to s.
func splitWords(s string) []string {
	var out []string
	start := 0
	word, prevSpace := false, false // word: the current piece has a word
	for i, r := range s {
		space := unicode.IsSpace(r)
		if word && prevSpace && !space {
			out = append(out, s[start:i])
			start = i
		}
		word = word || !space
		prevSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// splitN cuts s into at most n pieces of about equal size, on rune
// boundaries. An empty s is no pieces.
func splitN(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if runes == 0 {
		return nil
	}
	if n > runes {
		n = runes
	}
	out := make([]string, 0, n)
	per, extra := runes/n, runes%n
	start := 0
	i := 0
	count := 0
	size := per
	if extra > 0 {
		size++
	}
	for pos := range s {
		if count == size {
			out = append(out, s[start:pos])
			start = pos
			count = 0
			i++
			size = per
			if i < extra {
				size++
			}
		}
		count++
	}
	return append(out, s[start:])
}

// writeCompletion answers a non-streaming request.
func writeCompletion(w http.ResponseWriter, id, model string, r Reply, usage Usage) {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]map[string]any, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			calls[i] = map[string]any{
				"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}
		}
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": r.finish()}},
		"usage":   usage,
	})
}

// writeError answers with OpenAI's error shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}

// ParseScript reads replies as JSON lines, one Reply per line. Blank lines
// and lines starting with # are skipped; unknown fields are an error, so a
// typo does not silently change a script.
func ParseScript(r io.Reader) ([]Reply, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var out []Reply
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		var rep Reply
		if err := dec.Decode(&rep); err != nil {
			return nil, fmt.Errorf("fakemodel: script line %d: %w", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("fakemodel: script line %d: more than one JSON value", line)
		}
		if err := rep.validate(); err != nil {
			return nil, fmt.Errorf("fakemodel: script line %d: %w", line, err)
		}
		out = append(out, rep)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fakemodel: reading script: %w", err)
	}
	return out, nil
}

func (r Reply) validate() error {
	switch {
	case r.Status != 0 && (r.Status < 100 || r.Status > 599):
		return fmt.Errorf("status %d out of range", r.Status)
	case r.Chunks < 0, r.DelayMS < 0, r.StallAfter < 0, r.CutAfter < 0:
		return errors.New("chunks, delay_ms, stall_after and cut_after must not be negative")
	case r.Endless != "" && endlessPieces[r.Endless].repeat == "":
		return fmt.Errorf("endless %q: use %s, %s, %s, %s or %s", r.Endless, EndlessText, EndlessArguments, EndlessEvent, EndlessKeepAlive, EndlessToolCalls)
	}
	return nil
}
