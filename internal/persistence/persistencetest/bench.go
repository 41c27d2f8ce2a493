package persistencetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// BenchMessage is a plausible mid-sized message: ~1 KiB of content, and a
// tool call with metadata on every third one.
func BenchMessage(i int) *persistence.Message {
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

// ProseMessage is BenchMessage(i) with varied text (Prose) of the same
// length instead of one line repeated: for figures of bytes stored, which
// a repeated line makes meaningless.
func ProseMessage(i int) *persistence.Message {
	m := BenchMessage(i)
	m.Content = Prose(uint64(i), len(m.Content))
	for j := range m.Parts {
		m.Parts[j].Text = m.Content
	}
	return m
}

// FillLongSession creates session id with n ProseMessages, appended in
// batches, the older half compacted into a summary as a long session would
// have it.
func FillLongSession(ctx context.Context, s persistence.Store, id string, n int) error {
	if err := s.CreateSession(ctx, &persistence.Session{ID: id, Cwd: "/bench"}); err != nil {
		return err
	}
	const batch = 500
	var ids []int64
	for i := 0; i < n; i += batch {
		msgs := make([]*persistence.Message, min(batch, n-i))
		for j := range msgs {
			msgs[j] = ProseMessage(i + j)
		}
		if err := s.AppendMessages(ctx, id, msgs...); err != nil {
			return err
		}
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
	}
	c := &persistence.Compaction{SessionID: id, Policy: "summarise", CompactedIDs: ids[:n/2]}
	return ApplyCompaction(ctx, s, c, &persistence.Message{Role: persistence.RoleSummary, Content: "summary"})
}

// Bench measures a store on the paths a session takes: appending during a
// turn (one message per transaction, alone and contended), loading a
// 10,000-message session (session/load reads every message) and rebuilding
// the model's context from it (the active messages). Every backend runs the
// same benchmarks, so their figures compare. open returns a new, empty
// store.
func Bench(b *testing.B, open func(b *testing.B) persistence.Store) {
	ctx := context.Background()
	b.Run("AppendMessage", func(b *testing.B) {
		s := open(b)
		if err := s.CreateSession(ctx, &persistence.Session{ID: "bench"}); err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			if err := s.AppendMessages(ctx, "bench", BenchMessage(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("AppendMessageParallel", func(b *testing.B) {
		s := open(b)
		if err := s.CreateSession(ctx, &persistence.Session{ID: "bench"}); err != nil {
			b.Fatal(err)
		}
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				if err := s.AppendMessages(ctx, "bench", BenchMessage(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})

	// A turn's writes (the prompt, the reply stored when it starts, one
	// partial save, the final save) in a session of 2,000 messages, without
	// and with the lease a turn holds (taken, every write fenced, released
	// at the end), alternately, so that both see the same machine load.
	// lease-ns/turn is what the lease costs a turn.
	b.Run("TurnLease", func(b *testing.B) {
		s := open(b)
		if err := FillLongSession(ctx, s, "turns", 2000); err != nil {
			b.Fatal(err)
		}
		var plain, leased time.Duration
		for b.Loop() {
			start := time.Now()
			if err := benchTurn(ctx, s, "turns", false); err != nil {
				b.Fatal(err)
			}
			mid := time.Now()
			if err := benchTurn(ctx, s, "turns", true); err != nil {
				b.Fatal(err)
			}
			plain, leased = plain+mid.Sub(start), leased+time.Since(mid)
		}
		n := float64(b.N)
		b.ReportMetric(float64(plain.Nanoseconds())/n, "plain-ns/turn")
		b.ReportMetric(float64(leased.Nanoseconds())/n, "leased-ns/turn")
		b.ReportMetric(float64((leased-plain).Nanoseconds())/n, "lease-ns/turn")
	})

	// What the lease adds to a turn alone: taking and releasing it, and
	// one fenced write against the same write unfenced.
	b.Run("LeaseTakeRelease", func(b *testing.B) {
		s := open(b)
		if err := s.CreateSession(ctx, &persistence.Session{ID: "leased"}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			l := &persistence.Lease{SessionID: "leased", Owner: "bench", PID: 1, Host: "bench"}
			if err := s.AcquireLease(ctx, l, time.Minute, ""); err != nil {
				b.Fatal(err)
			}
			if err := s.ReleaseLease(ctx, "leased", l.Owner); err != nil {
				b.Fatal(err)
			}
		}
	})

	const n = 10_000
	parent := b
	var s persistence.Store
	setup := func(b *testing.B) {
		if s == nil {
			s = open(parent) // shared by the sub-benchmarks, closed with parent
			if err := FillLongSession(ctx, s, "long", n); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, bc := range []struct {
		name string
		f    persistence.MessageFilter
		want int
	}{
		{"Load10k", persistence.MessageFilter{}, n + 1},
		{"ContextRebuild10k", persistence.MessageFilter{ActiveOnly: true}, n/2 + 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			setup(b)
			for b.Loop() {
				if _, err := s.GetSession(ctx, "long"); err != nil {
					b.Fatal(err)
				}
				msgs, err := s.Messages(ctx, "long", bc.f)
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
	// session/fork of the long session: read whole, written whole as a
	// new session (the source's lease is held meanwhile).
	b.Run("Fork10k", func(b *testing.B) {
		setup(b)
		i := 0
		for b.Loop() {
			i++
			if _, err := s.ForkSession(ctx, "long", &persistence.Session{ID: fmt.Sprint("fork", i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchTurn makes the store writes of one turn that streams a reply.
func benchTurn(ctx context.Context, s persistence.Store, sessionID string, leased bool) error {
	if leased {
		l := &persistence.Lease{SessionID: sessionID, Owner: "bench", PID: 1, Host: "bench"}
		if err := s.AcquireLease(ctx, l, time.Minute, ""); err != nil {
			return err
		}
		defer s.ReleaseLease(ctx, sessionID, l.Owner)
		s = s.WithFence(l.Fence())
		if l.Abandoned {
			return fmt.Errorf("the lease released by the last turn counts as abandoned")
		}
	}
	user := &persistence.Message{Role: persistence.RoleUser, Content: "fix the failing test", Status: persistence.StatusComplete}
	if err := s.AppendMessages(ctx, sessionID, user); err != nil {
		return err
	}
	reply := &persistence.Message{Role: persistence.RoleAssistant, Content: "Looking", Status: persistence.StatusStreaming}
	if err := s.AppendMessages(ctx, sessionID, reply); err != nil {
		return err
	}
	reply.Content = strings.Repeat("Looking at the test. ", 20)
	if err := s.UpdateMessage(ctx, reply); err != nil {
		return err
	}
	reply.Content += "Done."
	reply.Status = persistence.StatusComplete
	return s.UpdateMessage(ctx, reply)
}
