package provider

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// A BodyCache never changes the body: along generated conversations (each
// request repeats the last one's messages, sometimes with one changed,
// some dropped as by a compaction, or written for another model) the
// cached body is byte for byte requestBody's, and the same requests fail.
func TestBodyCacheWritesTheSameBody(t *testing.T) {
	g := reqGen{rand.New(rand.NewPCG(19, 4))}
	for conv := range 200 {
		var cache BodyCache
		req := g.request()
		for step := range 12 {
			want, wantErr := requestBody(req, shapeFor(req))
			req.BodyCache = &cache
			p, err := encodeBody(req, shapeFor(req))
			got, _ := io.ReadAll(p.open())
			req.BodyCache = nil
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("conversation %d step %d: error %v, without the cache %v", conv, step, err, wantErr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("conversation %d step %d: bodies differ\n cached %s\n   want %s", conv, step, got, want)
			}
			req.Messages = slices.Clone(req.Messages)
			switch k := g.r.IntN(10); {
			case k == 0 && len(req.Messages) > 0: // one message changed in place
				req.Messages[g.r.IntN(len(req.Messages))] = g.message(false)
			case k == 1 && len(req.Messages) > 2: // compacted: the middle goes
				req.Messages = slices.Delete(req.Messages, 1, 1+g.r.IntN(len(req.Messages)-1))
			case k == 2: // another model
				other := g.request()
				req.Model, req.ReasoningHistory, req.ToolCallIDs = other.Model, other.ReasoningHistory, other.ToolCallIDs
			}
			for n := g.r.IntN(3); n > 0; n-- {
				req.Messages = append(req.Messages, g.message(false))
			}
		}
	}
}

// BenchmarkRequestBodyCached is BenchmarkRequestBody's long request sent
// again with one more message, through a BodyCache.
func BenchmarkRequestBodyCached(b *testing.B) {
	req := longRequest()
	req.BodyCache = &BodyCache{}
	if _, err := encodeBody(req, shapeFor(req)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		req.Messages = append(req.Messages[:len(req.Messages):len(req.Messages)], Message{Role: RoleUser, Content: "and now?"})
		body, err := encodeBody(req, shapeFor(req))
		if err != nil {
			b.Fatal(err)
		}
		// Read once, as the transport does: the pieces are copied there.
		if _, err := io.Copy(io.Discard, body.open()); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(body.size)
		req.Messages = req.Messages[:len(req.Messages)-1]
	}
}

// A cached body goes out whole, as requestBody writes it, with its length
// (not chunked: some endpoints refuse a chunked upload) and as JSON, and
// again with one more message on the next request.
func TestCachedBodyOnTheWire(t *testing.T) {
	type got struct {
		length   int64
		chunked  bool
		ctype    string
		body     []byte
		readFail error
	}
	seen := make(chan got, 2)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		seen <- got{r.ContentLength, slices.Contains(r.TransferEncoding, "chunked"), r.Header.Get("Content-Type"), b, err}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer hs.Close()
	c := NewOpenAI(OpenAIConfig{BaseURL: hs.URL + "/v1"})
	req := longRequest()
	req.BodyCache = &BodyCache{}
	for i := range 2 {
		if _, err := c.Stream(context.Background(), req, func(Event) error { return nil }); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		g := <-seen
		want, err := requestBody(Request{Model: req.Model, Messages: req.Messages, Tools: req.Tools, MaxTokens: req.MaxTokens}, shapeFor(req))
		if err != nil {
			t.Fatal(err)
		}
		if g.readFail != nil || !bytes.Equal(g.body, want) {
			t.Fatalf("request %d: body differs from requestBody's (%d bytes, want %d; read error %v)", i, len(g.body), len(want), g.readFail)
		}
		if g.length != int64(len(want)) || g.chunked || g.ctype != "application/json" {
			t.Fatalf("request %d: Content-Length %d (want %d), chunked %v, Content-Type %q", i, g.length, len(want), g.chunked, g.ctype)
		}
		req.Messages = append(req.Messages, Message{Role: RoleUser, Content: "and now?"})
	}
}
