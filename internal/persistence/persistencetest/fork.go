package persistencetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// testForkSession: a fork holds the source's whole history (compaction
// state included) under its own ids, and the two then change alone.
func testForkSession(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	RichSession(t, s, "src")
	src := mustDump(t, s, "src")
	before := time.Now().Add(-time.Second)
	fork := &persistence.Session{ID: "fork", Cwd: "/w/fork", Title: "forked", Metadata: json.RawMessage(`{"forkedFrom":{"sessionId":"src"}}`)}
	st, err := s.ForkSession(ctx, "src", fork)
	if err != nil {
		t.Fatalf("ForkSession: %v", err)
	}
	if st.Messages != RichSessionMessages || st.Compactions != RichSessionCompactions || st.LastSeq != src.LastSeq() {
		t.Errorf("ForkSession copied %+v, want %d messages, %d compactions, up to seq %d", st,
			RichSessionMessages, RichSessionCompactions, src.LastSeq())
	}
	if fork.CreatedAt.Before(before) || !fork.UpdatedAt.Equal(fork.CreatedAt) {
		t.Errorf("fork times: created %v, updated %v; want both now", fork.CreatedAt, fork.UpdatedAt)
	}
	got := mustDump(t, s, "fork")
	checkSession(t, *fork, got.Session)
	// The same history: the digest names messages by seq and compactions
	// by position, so only the session's own fields differ.
	want := *src
	want.Session = got.Session
	if mustDigest(t, &want) != mustDigest(t, got) {
		t.Error("the fork's history differs from the source's")
	}
	// Nothing shared: every message and compaction has an id of its own.
	srcIDs := map[int64]bool{}
	for _, m := range src.Messages {
		srcIDs[m.ID] = true
	}
	for _, m := range got.Messages {
		if srcIDs[m.ID] || m.SessionID != "fork" {
			t.Errorf("fork message seq %d: id %d session %q shared with the source", m.Seq, m.ID, m.SessionID)
		}
	}
	for i, c := range got.Compactions {
		if c.ID == src.Compactions[i].ID {
			t.Errorf("fork compaction %d kept the source id %d", i, c.ID)
		}
	}

	// Each goes on alone: a message and an undone compaction in the fork
	// leave the source as it was; deleting the source leaves the fork
	// whole, its long texts included.
	checkNextSeq(t, s, "fork", src.LastSeq()+1, "first seq in the fork")
	if err := s.ExpandCompaction(ctx, "fork", got.Compactions[0].ID); err != nil {
		t.Fatalf("expand in the fork: %v", err)
	}
	if mustDigest(t, mustDump(t, s, "src")) != mustDigest(t, src) {
		t.Error("changing the fork changed the source")
	}
	forked := mustDump(t, s, "fork")
	must(t, s.DeleteSession(ctx, "src"))
	after := mustDump(t, s, "fork")
	if mustDigest(t, after) != mustDigest(t, forked) {
		t.Error("deleting the source changed the fork")
	}

	// Errors change nothing.
	checkErr(t, "fork of an unknown session", errOf(s.ForkSession(ctx, "src", &persistence.Session{ID: "orphan"})), persistence.ErrNotFound)
	checkErr(t, "a failed fork left a session behind", errOf(s.GetSession(ctx, "orphan")), persistence.ErrNotFound)
	dup := &persistence.Session{ID: "fork", Title: "again"}
	checkErr(t, "fork onto an existing id", errOf(s.ForkSession(ctx, "fork", dup)), persistence.ErrConflict)
	mustCreate(t, s, &persistence.Session{ID: "other", CreatedAt: base})
	checkErr(t, "fork onto an existing id", errOf(s.ForkSession(ctx, "fork", &persistence.Session{ID: "other"})), persistence.ErrConflict)
	if n := len(mustMessages(t, s, "other", persistence.MessageFilter{})); n != 0 {
		t.Errorf("a refused fork wrote %d messages into the existing session", n)
	}
}
