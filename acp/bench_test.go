package acp

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// BenchmarkTextChunkNotification is the per-token cost of streaming: one
// agent_message_chunk encoded and written as a frame.
func BenchmarkTextChunkNotification(b *testing.B) {
	c := NewConn(strings.NewReader(""), io.Discard, Options{})
	n := &SessionNotification{SessionID: "sess_0123456789abcdef0123456789abcdef",
		Update: SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock("abcdefghijklmnopqrs ")}}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := c.SessionUpdate(context.Background(), n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnionMarshal(b *testing.B) {
	u := SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock("abcdefghijklmnopqrs ")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(u); err != nil {
			b.Fatal(err)
		}
	}
}
