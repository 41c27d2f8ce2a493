package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// compactionCaps are the capabilities of a client that advertises
// session.compaction (SDK 2.4; `crow-acp exec` always does).
func compactionCaps() acp.ClientCapabilities {
	on := json.RawMessage(`{}`)
	return acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{Compaction: &on}}
}

// TestLoadOverThresholdNothingToCompact: one long turn stored, then loaded
// with a window where it is over the compaction threshold but still fits,
// and nothing can be cut (issue 29, finding 1). The load and the next turn
// used to panic in reportCompaction with a client that advertises
// session.compaction; now both succeed and the client is told that nothing
// could be compacted.
func TestLoadOverThresholdNothingToCompact(t *testing.T) {
	ctx := context.Background()
	big, _, m := newTestAgent(t, Config{Model: "m", Models: []Model{{Name: "m", ContextWindow: 100000}}})
	m.SetFallback(fakemodel.Reply{Text: prose(3, 40)})
	cwd := t.TempDir()
	s, err := big.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(big, s.SessionID, prose(1, 900)); err != nil {
		t.Fatal(err)
	}
	used := storedRequestTokens(t, big, s.SessionID)
	big.Close()

	// The budget is just above what is stored: over the 0.9 threshold, it
	// fits, and the one turn cannot be cut.
	const reserve = 256
	window := used + 40 + reserve
	rec := &recorder{}
	small := New(rec, big.store, big.model, Config{Model: "m", Models: []Model{{Name: "m", ContextWindow: window, OutputReserve: reserve}}}, nil)
	t.Cleanup(small.Close)
	if _, err := small.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1, ClientCapabilities: compactionCaps()}); err != nil {
		t.Fatal(err)
	}
	if _, err := small.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd}); err != nil {
		t.Fatalf("load: %v", err)
	}
	if !sawCompactionNote(rec, "nothing it could compact") {
		t.Fatal("the load did not try a compaction: the test does not reach the case it pins")
	}
	if res, err := prompt(small, s.SessionID, "and now?"); err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("prompt after load: %v %v", res, err)
	}
}

// storedRequestTokens is the size of the next request of a stored session
// by the agent's own count (fixed head plus view), as a new process
// measures it on load.
func storedRequestTokens(t *testing.T, a *Agent, sessionID string) int {
	t.Helper()
	ctx := context.Background()
	sess, err := a.store.GetSession(ctx, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	mt := a.meterFor(sess)
	view, err := a.activeView(ctx, sessionID, mt.counter)
	if err != nil {
		t.Fatal(err)
	}
	used := a.fixedTokens(sess, mt.counter)
	for _, e := range contextMessages(mt.counter, a.systemPrompt(sess), view)[1:] {
		used += e.tokens
	}
	return used
}

// sawCompactionNote reports whether a compaction_update carrying text
// reached the client.
func sawCompactionNote(r *recorder, text string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates {
		if u.Other == nil {
			continue
		}
		if _, ok := acp.ParseCompactionUpdate(u.Other); ok && strings.Contains(string(u.Other), text) {
			return true
		}
	}
	return false
}
