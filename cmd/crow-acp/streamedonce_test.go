package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
	"github.com/crow-acp/crow-acp/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/persistence/projection"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestStreamedReplyStoredOnce: a reply streamed in chunks is in the event
// log once, as its frames. Its message_updated records say how many bytes
// the frames hold instead of repeating them (the message row has the text
// for sqlite3), and sessions verify rebuilds the text from the frames.
// The stream is paced so that the reply is saved as it grows: the records
// cut the text at several places.
func TestStreamedReplyStoredOnce(t *testing.T) {
	bin := testBinary(t)
	onBothStores(t, func(t *testing.T, dsn string) {
		model, db, env, cwd := procSetupOn(t, dsn)
		text := persistencetest.Prose(7, 12000) + " ünïcödé 🙂 — the end"
		thought := persistencetest.Prose(8, 600)
		model.SetFallback(fakemodel.Reply{Text: text, Reasoning: thought, Chunks: 301, DelayMS: 4})
		c := newLeaseClient(t, bin, env)
		sid := c.newSession(cwd)
		c.prompt(sid, "hi")
		c.p.close()

		ctx := context.Background()
		s, err := backend.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		msgs, err := s.Messages(ctx, sid, persistence.MessageFilter{})
		if err != nil || len(msgs) != 2 || msgs[1].Content != text || msgs[1].Reasoning != thought {
			t.Fatalf("messages: %v %d, want the reply whole in its row", err, len(msgs))
		}
		evs, err := s.Events(ctx, sid, persistence.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		updates, recorded := 0, 0
		for _, e := range evs {
			if e.Kind != persistence.EventMessageAppended && e.Kind != persistence.EventMessageUpdated {
				continue
			}
			updates++
			recorded += len(e.Body)
			if bytes.Contains(e.Body, []byte(text[1000:1040])) || bytes.Contains(e.Body, []byte(thought[300:340])) {
				t.Errorf("event %d (%s) repeats the streamed text: %.200s", e.Seq, e.Kind, e.Body)
			}
		}
		if updates < 4 || recorded > 400*updates {
			t.Errorf("%d message records of %d bytes in all, want several partial saves, each well under the reply's %d bytes", updates, recorded, len(text))
		}
		r, err := projection.Verify(ctx, s, sid)
		if err != nil || !r.OK() || r.Messages != 2 {
			t.Fatalf("verify: %v %+v", err, r)
		}
		st, _, err := projection.Load(ctx, s, sid)
		if err != nil || st.Messages[1].Content != text || st.Messages[1].Reasoning != thought {
			t.Fatalf("rebuilt reply differs: %v", err)
		}

		// The retention prunes the frames: the reply's text is no longer
		// in the log, and verify says so instead of failing.
		if n, err := s.PruneEvents(ctx, time.Now().Add(time.Minute)); err != nil || n == 0 {
			t.Fatalf("prune: %d, %v", n, err)
		}
		r, err = projection.Verify(ctx, s, sid)
		if err != nil || !r.OK() || r.Pruned != 1 {
			t.Fatalf("verify after pruning the frames: %v %+v", err, r)
		}
	})
}
