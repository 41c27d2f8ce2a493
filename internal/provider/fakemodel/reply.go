package fakemodel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ModelID is the model GET /v1/models lists, and the model a reply names when
// the request names none.
const ModelID = "fake-model"

// created is the fixed "created" timestamp of every reply, for stable output.
const created = 1700000000

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

// writeRawError answers with a provider's own error body, byte for byte.
func writeRawError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
