package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
)

// BenchmarkAcknowledgedMessages measures acknowledged messages per second:
// each op commits one ~1 KiB message with its projection event and returns
// only then, which is what the agent waits for before it acknowledges
// anything. NORMAL is crow-acp's setting (survives a process crash); FULL
// fsyncs every commit (survives power loss too).
func BenchmarkAcknowledgedMessages(b *testing.B) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run(sync, func(b *testing.B) {
			dsn := strings.Replace(pragmas, "_synchronous=NORMAL", "_synchronous="+sync, 1)
			p, err := open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), dsn)
			if err != nil {
				b.Fatal(err)
			}
			s := &Store{sqlcore.Opened(dialect, p.database())}
			defer s.Close()
			ctx := context.Background()
			if err := s.CreateSession(ctx, &persistence.Session{ID: "bench"}); err != nil {
				b.Fatal(err)
			}
			text := strings.Repeat("a line of a model reply. ", 40)
			i := 0
			for b.Loop() {
				m := &persistence.Message{Role: persistence.RoleUser, Content: fmt.Sprint(i, text), Status: persistence.StatusComplete}
				if err := s.AppendMessages(ctx, "bench", m); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acked-msgs/s")
		})
	}
}

// BenchmarkFrameBatch is the frame log's hot path: one transaction of 200
// streamed-update frames (one 200-chunk reply).
func BenchmarkFrameBatch(b *testing.B) {
	s := mustOpen(b, filepath.Join(b.TempDir(), "bench.db"))
	ctx := context.Background()
	frame := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_0123456789abcdef","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"abcdefghijklmnopqrs "}}}}`)
	for b.Loop() {
		evs := make([]*persistence.Event, 200)
		for i := range evs {
			evs[i] = &persistence.Event{Stream: "sess_0123456789abcdef", Direction: persistence.DirOut, Turn: 1,
				Kind: persistence.EventNotification, Method: "session/update", Body: frame}
		}
		if err := s.AppendEvents(ctx, evs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/200-frames")
}
