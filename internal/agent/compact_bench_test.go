package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// BenchmarkContextRebuild100k rebuilds the model's context of a session
// with 100,000 stored messages, all but the newest 40 compacted into a
// summary (target: at most 10 ms). The rebuild reads only the active view.
func BenchmarkContextRebuild100k(b *testing.B) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "crow.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	a := New(&recorder{}, store, provider.Client(nil), Config{Model: "gpt-4o-mini"}, nil)
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	const total, batch, kept = 100000, 2000, 40
	var ids []int64
	for i := 0; i < total; i += batch {
		msgs := make([]*persistence.Message, batch)
		for j := range msgs {
			role := persistence.RoleUser
			if (i+j)%2 == 1 {
				role = persistence.RoleAssistant
			}
			msgs[j] = &persistence.Message{Role: role, Content: fmt.Sprintf("message %d: the parser fails on empty input, fix it and add a test", i+j), Status: persistence.StatusComplete}
		}
		if err := store.AppendMessages(ctx, s.SessionID, msgs...); err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
	}
	c := &persistence.Compaction{SessionID: s.SessionID, Policy: "summarize", CompactedIDs: ids[:total-kept], KeptIDs: ids[total-kept:]}
	if err := store.Compact(ctx, c, []*persistence.Message{{Role: persistence.RoleSummary, Content: "summary of 99,960 messages", Status: persistence.StatusComplete}}); err != nil {
		b.Fatal(err)
	}
	sess, err := store.GetSession(ctx, s.SessionID)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.build.Prepare(ctx, &a.sessions.get(sess.ID).req, sess); err != nil { // counts and caches the view once
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		msgs, err := a.build.Prepare(ctx, &a.sessions.get(sess.ID).req, sess)
		if err != nil {
			b.Fatal(err)
		}
		// The system prompt, then the summary merged with the first kept
		// (user) message, since roles alternate, then the other 39.
		if len(msgs) != kept+1 {
			b.Fatalf("context has %d messages, want %d", len(msgs), kept+1)
		}
	}
}
