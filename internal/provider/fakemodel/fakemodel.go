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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// maxStall bounds a StallAfter pause when the client never disconnects.
const maxStall = 30 * time.Second

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

// SetRules replaces the rules every chat request is checked against (none
// at first).
func (s *Server) SetRules(rules ...Rule) {
	s.mu.Lock()
	s.rules = append([]Rule(nil), rules...)
	s.mu.Unlock()
}

func (s *Server) check(body []byte, h http.Header) *Rejection {
	s.mu.Lock()
	rules := s.rules
	s.mu.Unlock()
	if len(rules) == 0 {
		return nil
	}
	req := ruleRequest{Auth: h.Get("Authorization")}
	if json.Unmarshal(body, &req.Keys) != nil {
		return nil // the handler answers malformed JSON itself
	}
	_ = json.Unmarshal(req.Keys["model"], &req.Model)
	_ = json.Unmarshal(req.Keys["messages"], &req.Messages)
	for _, r := range rules {
		if rej := r.check(&req); rej != nil {
			return rej
		}
	}
	return nil
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

// endless streams the piece of kind until the client disconnects or the
// server closes.
func (s *Server) endless(w http.ResponseWriter, r *http.Request, kind string) {
	p := endlessPieces[kind]
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte(p.first)); err != nil {
		return
	}
	for i := 0; ; i++ {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		default:
		}
		piece := p.repeat
		if p.numbered {
			piece = fmt.Sprintf(piece, i)
		}
		if _, err := w.Write([]byte(piece)); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if p.pause > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-s.done:
				return
			case <-time.After(p.pause):
			}
		}
	}
}
