package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/openai/openai-go/v3/option"
)

// BodyCache keeps the JSON of the messages of a conversation's last
// request, so that the next request, which repeats them and adds a few,
// encodes only what is new. A long session without compaction sends its
// whole history every time: encoding megabytes for each request made a
// turn's cost grow with the history (issue 19). A message is reused only
// when it equals the one encoded at its position and the model wants the
// history written the same way (reasoning passback, tool-call id style);
// the body is byte for byte the one requestBody writes without a cache.
// One cache serves one conversation; it is safe for concurrent use.
type BodyCache struct {
	mu    sync.Mutex
	shape historyShape
	msgs  []Message // the messages encoded, by position
	enc   [][]byte  // their JSON
}

// historyShape is the part of a bodyShape that changes how messages are
// written.
type historyShape struct {
	reasoning   ReasoningHistory
	toolCallIDs ToolCallIDStyle
	signatures  bool // Gemini's thought signatures go back with the calls
}

// encoded returns the JSON of each message of msgs, reusing what it kept.
func (c *BodyCache) encoded(msgs []Message, shape bodyShape) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hs := historyShape{shape.reasoning, shape.toolCallIDs, shape.signatures != nil}
	if hs != c.shape {
		c.shape, c.msgs, c.enc = hs, nil, nil
	}
	out := make([][]byte, len(msgs))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, m := range msgs {
		if i < len(c.msgs) && sameMessage(&c.msgs[i], &m) {
			out[i] = c.enc[i]
			continue
		}
		msg, err := chatMessageOf(m, shape)
		if err != nil {
			return nil, fmt.Errorf("streaming: message %d: %w", i, err)
		}
		buf.Reset()
		if err := enc.Encode(&msg); err != nil {
			return nil, fmt.Errorf("streaming: encoding the request: %w", err)
		}
		out[i] = bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	c.msgs, c.enc = slices.Clone(msgs), out
	return out, nil
}

// sameMessage reports whether a and b are written alike. Strings shared
// with the kept message compare by pointer first, so this is cheap for a
// history that did not change.
func sameMessage(a, b *Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Reasoning == b.Reasoning &&
		a.ToolCallID == b.ToolCallID && slices.Equal(a.Parts, b.Parts) && slices.Equal(a.ToolCalls, b.ToolCalls)
}

// payload is a request body kept as the pieces it was built from: the
// fields around the messages and each message's cached JSON. A long
// session without compaction sends megabytes every turn; joining them into
// one fresh buffer per request cost an allocation, its zeroing and a copy
// that all grew with the history (issue 19). The transport reads the
// pieces as they are. No piece is written after the payload is built (the
// cache replaces a message's JSON, never changes it), so the transport may
// go on reading them even after the response has arrived.
type payload struct {
	pieces [][]byte
	size   int64
}

func payloadOf(pieces ...[]byte) payload {
	p := payload{pieces: pieces}
	for _, b := range pieces {
		p.size += int64(len(b))
	}
	return p
}

// open returns a reader of the whole body from its start.
func (p payload) open() io.ReadCloser {
	bufs := net.Buffers(slices.Clone(p.pieces))
	return io.NopCloser(&bufs)
}

// send is the middleware that makes p the request's body, with its length
// (no chunked encoding, which some endpoints refuse) and a way to read it
// again.
func (p payload) send() option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		req.Body, req.ContentLength = p.open(), p.size
		req.GetBody = func() (io.ReadCloser, error) { return p.open(), nil }
		return next(req)
	}
}

// encodeBody is the request body of req: from its cache when it has one.
func encodeBody(req Request, shape bodyShape) (payload, error) {
	if req.BodyCache == nil {
		b, err := requestBody(req, shape)
		return payloadOf(b), err
	}
	return cachedBody(req, shape, req.BodyCache)
}

// cachedBody is requestBody with the messages' JSON from cache: the body
// around them is encoded as requestBody encodes it, and the messages are
// placed between, comma-separated.
func cachedBody(req Request, shape bodyShape, cache *BodyCache) (payload, error) {
	msgs, err := cache.encoded(req.Messages, shape)
	if err != nil {
		return payload{}, err
	}
	// The fields around "messages", in chatBody's order.
	head, err := encodeJSON(struct {
		Model string `json:"model,omitempty"`
	}{req.Model})
	if err != nil {
		return payload{}, err
	}
	full, err := requestBody(Request{Model: req.Model, Tools: req.Tools, MaxTokens: req.MaxTokens}, shape)
	if err != nil {
		return payload{}, err
	}
	// full is {<head fields>,"messages":[],<tail>}\n for an empty history.
	head = bytes.TrimSuffix(head, []byte("}"))
	if len(head) > 1 {
		head = append(head, ',')
	}
	head = append(head, `"messages":[`...)
	if !bytes.HasPrefix(full, head) || !bytes.HasPrefix(full[len(head):], []byte("]")) {
		return payload{}, fmt.Errorf("streaming: encoding the request: unexpected body layout")
	}
	pieces := make([][]byte, 0, 2*len(msgs)+2)
	pieces = append(pieces, head)
	for i, m := range msgs {
		if i > 0 {
			pieces = append(pieces, comma)
		}
		pieces = append(pieces, m)
	}
	return payloadOf(append(pieces, full[len(head):])...), nil
}

var comma = []byte(",")

// encodeJSON encodes v as requestBody does (no HTML escaping), without
// the trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("streaming: encoding the request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
