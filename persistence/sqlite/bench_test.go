package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/persistence"
)

// benchMessage is a plausible mid-sized message: ~1 KiB of content, and a
// tool call with metadata on every third one.
func benchMessage(i int) *persistence.Message {
	m := &persistence.Message{
		Role:       persistence.RoleAssistant,
		Content:    strings.Repeat(fmt.Sprintf("line %d of a model reply. ", i), 40),
		Status:     persistence.StatusComplete,
		TokenCount: 250,
	}
	switch i % 3 {
	case 0:
		m.Role = persistence.RoleUser
		m.Parts = []persistence.Part{{Type: "text", Text: m.Content}}
	case 1:
		m.Reasoning = "thinking about it"
		m.ToolCalls = []persistence.ToolCall{{ID: fmt.Sprint("call_", i), Name: "read_file", Arguments: `{"path":"/src/main.go"}`}}
		m.Meta = json.RawMessage(`{"title":"Read main.go","kind":"read"}`)
	case 2:
		m.Role = persistence.RoleTool
		m.ToolCallID = fmt.Sprint("call_", i-1)
	}
	return m
}

func benchStore(b *testing.B) *Store {
	b.Helper()
	s := mustOpen(b, filepath.Join(b.TempDir(), "bench.db"))
	if err := s.CreateSession(context.Background(), &persistence.Session{ID: "bench"}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAppendMessages is one message per call, so one transaction each:
// the write path of a streaming turn.
func BenchmarkAppendMessages(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if err := s.AppendMessages(ctx, "bench", benchMessage(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAppendMessagesParallel appends to one session from GOMAXPROCS
// goroutines: contention on the write connection.
func BenchmarkAppendMessagesParallel(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if err := s.AppendMessages(ctx, "bench", benchMessage(i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMessages10k reads a 10,000-message session: the context rebuild
// on session/load.
func BenchmarkMessages10k(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	const n, batch = 10_000, 500
	var ids []int64
	for i := 0; i < n; i += batch {
		msgs := make([]*persistence.Message, batch)
		for j := range msgs {
			msgs[j] = benchMessage(i + j)
		}
		if err := s.AppendMessages(ctx, "bench", msgs...); err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
	}
	// Compact the older half away, as a long session would have.
	c := &persistence.Compaction{SessionID: "bench", Policy: "summarise", CompactedIDs: ids[:n/2]}
	if err := s.ApplyCompaction(ctx, c, &persistence.Message{Role: persistence.RoleSummary, Content: "summary"}); err != nil {
		b.Fatal(err)
	}

	for _, bc := range []struct {
		name string
		f    persistence.MessageFilter
		want int
	}{
		{"All", persistence.MessageFilter{}, n + 1},
		{"ActiveOnly", persistence.MessageFilter{ActiveOnly: true}, n/2 + 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				msgs, err := s.Messages(ctx, "bench", bc.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(msgs) != bc.want {
					b.Fatalf("%d messages, want %d", len(msgs), bc.want)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bc.want), "ns/msg")
		})
	}
}
