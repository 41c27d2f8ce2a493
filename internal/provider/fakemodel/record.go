package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Record mode: a Recorder stands between crow-acp and a real endpoint,
// passes every request through, and keeps each chat completion's answer as
// a Reply, so a session captured once replays in tests (a fixture's
// -- model -- section) with no endpoint. Only the replies are kept: no
// request, no header, no key. The key the client sends is passed upstream
// and never written; text that contains it (or anything shaped like an API
// key) is redacted.

// maxRecordedBody bounds one upstream answer the Recorder keeps in memory
// to turn into a Reply; a longer one is passed through but not recorded.
const maxRecordedBody = 16 << 20

// Redacted replaces a secret in recorded text.
const Redacted = "[REDACTED]"

// keyShaped matches the API keys of the common providers (sk-…, sk-or-…,
// gsk_…, AIza…, hf_…, xai-…) and bearer tokens.
var keyShaped = regexp.MustCompile(`\b(?:sk-[A-Za-z0-9_\-]{16,}|gsk_[A-Za-z0-9]{20,}|AIza[A-Za-z0-9_\-]{30,}|hf_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,})|(?i:bearer)\s+[A-Za-z0-9._\-]{16,}`)

// Recorder is an http.Handler that proxies to an upstream OpenAI-compatible
// endpoint and records the replies to chat-completion requests.
type Recorder struct {
	upstream *url.URL
	client   *http.Client
	// OnReply, if set, is called with all replies recorded so far after
	// each new one (to write them out as they come).
	OnReply func([]Reply) error

	mu      sync.Mutex
	replies []Reply
	secrets map[string]bool // keys seen in request headers, redacted from the replies
	err     error           // the first OnReply failure
}

// NewRecorder proxies to upstream, the endpoint's base URL (…/v1).
func NewRecorder(upstream string) (*Recorder, error) {
	u, err := url.Parse(strings.TrimRight(upstream, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("fakemodel: record: upstream %q is not an http(s) URL such as https://api.example.com/v1", upstream)
	}
	return &Recorder{upstream: u, client: &http.Client{Timeout: 30 * time.Minute}, secrets: map[string]bool{}}, nil
}

// Replies returns the replies recorded so far, secrets redacted.
func (r *Recorder) Replies() []Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Reply(nil), r.replies...)
}

// Err is the first error OnReply returned.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRecordedBody+1))
	if err != nil || len(body) > maxRecordedBody {
		http.Error(w, "fakemodel: record: request body unreadable or too large", http.StatusRequestEntityTooLarge)
		return
	}
	// The client's base URL ends in /v1 like every OpenAI-compatible one;
	// what follows is joined to the upstream's base.
	rest := strings.TrimPrefix(req.URL.Path, "/v1")
	target := *r.upstream
	target.Path = strings.TrimRight(r.upstream.Path, "/") + rest
	target.RawQuery = req.URL.RawQuery
	for _, k := range []string{"key", "api-key", "api_key"} {
		if v := req.URL.Query().Get(k); v != "" {
			r.noteSecret(v)
		}
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, h := range []string{"Authorization", "Api-Key", "X-Api-Key", "Content-Type", "Accept", "OpenAI-Organization", "HTTP-Referer", "X-Title"} {
		if v := req.Header.Get(h); v != "" {
			out.Header.Set(h, v)
			if h == "Authorization" || h == "Api-Key" || h == "X-Api-Key" {
				r.noteSecret(v)
			}
		}
	}
	resp, err := r.client.Do(out)
	if err != nil {
		http.Error(w, "fakemodel: record: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Retry-After", "Cache-Control"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	// Pass the answer through as it arrives, keeping a bounded copy.
	var kept bytes.Buffer
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if kept.Len() <= maxRecordedBody {
				kept.Write(buf[:n])
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			break
		}
	}
	if req.Method != http.MethodPost || !strings.HasSuffix(rest, "/chat/completions") || kept.Len() > maxRecordedBody {
		return
	}
	reply, ok := replyFrom(resp.StatusCode, resp.Header.Get("Content-Type"), kept.Bytes())
	if !ok {
		return
	}
	r.add(reply)
}

// noteSecret remembers a header value (and its token after "Bearer ").
func (r *Recorder) noteSecret(v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v = strings.TrimSpace(v)
	if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
		v = strings.TrimSpace(tok)
	}
	if len(v) >= 8 {
		r.secrets[v] = true
	}
}

func (r *Recorder) add(reply Reply) {
	r.mu.Lock()
	reply = redactReply(reply, r.secrets)
	r.replies = append(r.replies, reply)
	all := append([]Reply(nil), r.replies...)
	onReply := r.OnReply
	r.mu.Unlock()
	if onReply == nil {
		return
	}
	if err := onReply(all); err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
}

// redact removes the secrets and anything shaped like a key from s.
func redact(s string, secrets map[string]bool) string {
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, Redacted)
	}
	return keyShaped.ReplaceAllString(s, Redacted)
}

func redactReply(rep Reply, secrets map[string]bool) Reply {
	rep.Text = redact(rep.Text, secrets)
	rep.Reasoning = redact(rep.Reasoning, secrets)
	rep.ErrorBody = redact(rep.ErrorBody, secrets)
	calls := make([]ToolCall, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		c.Arguments = redact(c.Arguments, secrets)
		calls[i] = c
	}
	if len(calls) > 0 {
		rep.ToolCalls = calls
	}
	return rep
}

// replyFrom turns an upstream answer into a Reply: an error status with its
// body, an event stream, or one chat.completion object.
func replyFrom(status int, contentType string, body []byte) (Reply, bool) {
	if status != http.StatusOK {
		rep := Reply{Status: status}
		if json.Valid(body) {
			rep.ErrorBody = string(body)
		} else {
			rep.Text = strings.TrimSpace(string(body))
		}
		return rep, true
	}
	if strings.HasPrefix(contentType, "text/event-stream") || bytes.HasPrefix(bytes.TrimSpace(body), []byte("data:")) {
		return replyFromStream(body)
	}
	var c completionChunk
	if json.Unmarshal(body, &c) != nil || len(c.Choices) == 0 {
		return Reply{}, false
	}
	var acc replyAccumulator
	m := c.Choices[0].Message
	acc.delta(chunkDelta{Content: m.Content, ReasoningContent: m.ReasoningContent, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls})
	acc.finish = c.Choices[0].FinishReason
	acc.usage = c.Usage
	return acc.reply(), true
}

// completionChunk is what the recorder reads of a streamed chunk or a whole
// completion.
type completionChunk struct {
	Choices []struct {
		Delta        chunkDelta `json:"delta"`
		Message      chunkDelta `json:"message"`
		FinishReason string     `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

type chunkDelta struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	ToolCalls        []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type replyAccumulator struct {
	text, reasoning strings.Builder
	textDeltas      int
	calls           map[int]*ToolCall
	finish          string
	usage           *Usage
}

func (a *replyAccumulator) delta(d chunkDelta) {
	if d.Content != "" {
		a.text.WriteString(d.Content)
		a.textDeltas++
	}
	a.reasoning.WriteString(d.ReasoningContent)
	a.reasoning.WriteString(d.Reasoning)
	for _, tc := range d.ToolCalls {
		if a.calls == nil {
			a.calls = map[int]*ToolCall{}
		}
		c := a.calls[tc.Index]
		if c == nil {
			c = &ToolCall{}
			a.calls[tc.Index] = c
		}
		if tc.ID != "" {
			c.ID = tc.ID
		}
		c.Name += tc.Function.Name
		c.Arguments += tc.Function.Arguments
	}
}

func (a *replyAccumulator) reply() Reply {
	rep := Reply{Text: a.text.String(), Reasoning: a.reasoning.String(), Usage: a.usage}
	if a.textDeltas > 1 {
		rep.Chunks = a.textDeltas
	} else if rep.Text != "" {
		rep.Chunks = 1
	}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		rep.ToolCalls = append(rep.ToolCalls, *a.calls[i])
	}
	// The default finish (tool_calls with calls, else stop) is left out.
	if def := map[bool]string{true: "tool_calls", false: "stop"}[len(rep.ToolCalls) > 0]; a.finish != def {
		rep.Finish = a.finish
	}
	return rep
}

// replyFromStream reads an OpenAI event stream.
func replyFromStream(body []byte) (Reply, bool) {
	var acc replyAccumulator
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), maxRecordedBody)
	seen := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		data = strings.TrimSpace(data)
		if !ok || data == "" || data == "[DONE]" {
			continue
		}
		var c completionChunk
		if json.Unmarshal([]byte(data), &c) != nil {
			continue
		}
		seen = true
		if c.Usage != nil {
			acc.usage = c.Usage
		}
		for _, ch := range c.Choices {
			acc.delta(ch.Delta)
			if ch.FinishReason != "" {
				acc.finish = ch.FinishReason
			}
		}
	}
	return acc.reply(), seen
}

// WriteFixture writes replies as a fixture's -- model -- section, after a
// header saying where they came from.
func WriteFixture(w io.Writer, header string, replies []Reply) error {
	var b bytes.Buffer
	b.WriteString(strings.TrimRight(header, "\n") + "\n\n-- model --\n")
	for _, rep := range replies {
		line, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}
