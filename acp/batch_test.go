package acp

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// writeCounter is a client's end of the pipe that counts the writes.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// batchUpdates are the updates of a replay: chunks of every kind, tool
// calls, one frame larger than a whole batch.
func batchUpdates() []*SessionNotification {
	var out []*SessionNotification
	for i := range 600 {
		text := strings.Repeat("a line of an old reply <é> \"quoted\"\n", 1+i%40)
		out = append(out,
			&SessionNotification{SessionID: "s", Update: SessionUpdate{UserMessageChunk: &ContentChunk{Content: TextBlock(text), MessageID: "m"}}},
			&SessionNotification{SessionID: "s", Update: SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock(text)}}},
			&SessionNotification{SessionID: "s", Update: SessionUpdate{ToolCall: &ToolCall{ToolCallID: "c", Title: "read", Status: ToolStatusCompleted}}})
	}
	big := strings.Repeat("x", 3*batchBytes)
	return append(out, &SessionNotification{SessionID: "s", Update: SessionUpdate{AgentThoughtChunk: &ContentChunk{Content: TextBlock(big)}}})
}

// TestUpdateBatchWritesTheSameFrames: a batch writes the bytes that one
// SessionUpdate per update writes, OnFrame sees the same frames, and the
// frames go out in about one write per batchBytes instead of one each.
func TestUpdateBatchWritesTheSameFrames(t *testing.T) {
	ctx := context.Background()
	run := func(batched bool) (*writeCounter, []string) {
		w := &writeCounter{}
		var seen []string
		c := NewConn(strings.NewReader(""), w, Options{OnFrame: func(d Direction, b []byte) { seen = append(seen, string(b)) }})
		b := c.Batch()
		for _, n := range batchUpdates() {
			send := c.SessionUpdate
			if batched {
				send = b.SessionUpdate
			}
			if err := send(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		return w, seen
	}
	one, oneSeen := run(false)
	batch, batchSeen := run(true)
	if !bytes.Equal(batch.Bytes(), one.Bytes()) {
		t.Fatalf("batched frames differ from one-by-one frames (%d vs %d bytes)", batch.Len(), one.Len())
	}
	if strings.Join(batchSeen, "\n") != strings.Join(oneSeen, "\n") || len(batchSeen) != len(oneSeen) {
		t.Errorf("OnFrame saw %d frames batched, %d one by one, or different ones", len(batchSeen), len(oneSeen))
	}
	if max := one.Len()/batchBytes + 2; batch.writes > max {
		t.Errorf("%d writes for %d bytes batched, want at most %d (one by one: %d)", batch.writes, batch.Len(), max, one.writes)
	}
}

// TestUpdateBatchRefusesWhatSessionUpdateRefuses: a bad update is an error,
// and the frames before it still go out whole.
func TestUpdateBatchRefusesWhatSessionUpdateRefuses(t *testing.T) {
	w := &writeCounter{}
	c := NewConn(strings.NewReader(""), w, Options{})
	b := c.Batch()
	ctx := context.Background()
	if err := b.SessionUpdate(ctx, &SessionNotification{SessionID: "s", Update: SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock("ok")}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.SessionUpdate(ctx, &SessionNotification{SessionID: "s"}); err == nil {
		t.Error("an empty update was accepted")
	}
	if err := c.SessionUpdate(ctx, &SessionNotification{SessionID: "s"}); err == nil {
		t.Error("SessionUpdate accepted an empty update")
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.String(); strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "}}\n") {
		t.Errorf("wrote %q, want the one good frame", got)
	}
}
