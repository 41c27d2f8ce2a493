package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

const (
	benchChunks    = 200
	benchChunkSize = 20
)

// textChunks is a stream of n content chunks of size bytes each, then finish
// and usage, as JSON.
func textChunks(n, size int) [][]byte {
	piece := strings.Repeat("x", size-1) + " "
	out := make([][]byte, 0, n+2)
	for range n {
		out = append(out, fmt.Appendf(nil, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}],"usage":null}`, piece))
	}
	out = append(out,
		[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`),
		[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1000,"total_tokens":1010}}`))
	return out
}

// toolChunks streams two tool calls whose arguments arrive in n pieces of
// size bytes in total, interleaved.
func toolChunks(n, size int) [][]byte {
	out := [][]byte{
		[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"write_file","arguments":""}}]},"finish_reason":null}]}`),
		[]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"write_file","arguments":""}}]},"finish_reason":null}]}`),
	}
	for i := range n {
		var args string
		switch {
		case i < 2:
			args = `{"content":"`
		case i >= n-2:
			args = `"}`
		default:
			args = strings.Repeat("y", size)
		}
		b, _ := json.Marshal(args)
		out = append(out, fmt.Appendf(nil, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"finish_reason":null}]}`, i%2, b))
	}
	return append(out, []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`))
}

func decodeAll(b *testing.B, raw [][]byte) []provider.Chunk {
	out := make([]provider.Chunk, len(raw))
	for i, r := range raw {
		var err error
		if out[i], err = provider.DecodeChunk(r); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// BenchmarkParser: one op is a whole stream of 200 content chunks of 20
// characters through Add and Finish (chunks already decoded).
func BenchmarkParser(b *testing.B) {
	chunks := decodeAll(b, textChunks(benchChunks, benchChunkSize))
	b.ReportAllocs()
	for b.Loop() {
		var p provider.Parser
		for _, c := range chunks {
			p.Add(c)
		}
		if r := p.Finish(); len(r.Text) != benchChunks*benchChunkSize {
			b.Fatalf("text %d bytes", len(r.Text))
		}
	}
}

// BenchmarkParserWithDecode adds the JSON decoding of each chunk, the real
// per-chunk cost in Stream.
func BenchmarkParserWithDecode(b *testing.B) {
	raw := textChunks(benchChunks, benchChunkSize)
	b.ReportAllocs()
	for b.Loop() {
		var p provider.Parser
		for _, r := range raw {
			c, err := provider.DecodeChunk(r)
			if err != nil {
				b.Fatal(err)
			}
			p.Add(c)
		}
		p.Finish()
	}
}

// BenchmarkDecodeChunk compares decoding one content chunk as Stream does
// with decoding it into openai-go's ChatCompletionChunk, which Stream used
// to do.
func BenchmarkDecodeChunk(b *testing.B) {
	raw := textChunks(1, benchChunkSize)[0]
	b.Run("crow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := provider.DecodeChunk(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("openai-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c openai.ChatCompletionChunk
			if err := json.Unmarshal(raw, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParserToolCalls: two interleaved tool calls whose arguments come
// in 200 deltas of 20 characters; each delta reports the call so far.
func BenchmarkParserToolCalls(b *testing.B) {
	chunks := decodeAll(b, toolChunks(benchChunks, benchChunkSize))
	b.ReportAllocs()
	for b.Loop() {
		var p provider.Parser
		for _, c := range chunks {
			p.Add(c)
		}
		r := p.Finish()
		if len(r.ToolCalls) != 2 || r.ToolCalls[0].ArgumentsError != "" {
			b.Fatalf("calls %+v", r.ToolCalls)
		}
	}
}

// BenchmarkStreamFakeModel: one op is a whole request over loopback HTTP
// against fakemodel, 200 text deltas of 20 characters.
func BenchmarkStreamFakeModel(b *testing.B) {
	srv := fakemodel.Start()
	defer srv.Close()
	text := strings.Repeat(strings.Repeat("z", benchChunkSize-1)+" ", benchChunks)
	srv.SetFallback(fakemodel.Reply{Text: text, Chunks: benchChunks})
	c := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL()})
	req := provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.RoleUser, Content: "go"}}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Stream(context.Background(), req, func(provider.Event) error { return nil })
		if err != nil || res.Text != text {
			b.Fatalf("err %v, %d bytes", err, len(res.Text))
		}
	}
}
