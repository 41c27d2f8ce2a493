package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
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
	big, _, m := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: 100000}}})
	m.SetFallback(fakemodel.Reply{Text: prose(3, 40)})
	cwd := t.TempDir()
	s, err := big.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(big, s.SessionID, prose(1, 900)); err != nil {
		t.Fatal(err)
	}
	big.Close()

	// The budget is just above what is stored: over the 0.9 threshold, it
	// fits, and the one turn cannot be cut. The system prompt's tier follows
	// the window, so the stored request is measured by an agent whose window
	// is in the same tier as the one the load will use.
	const reserve = 256
	window := 3000
	for range 3 {
		probe := New(&recorder{}, big.store, big.model, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: window, OutputReserve: reserve}}}, nil)
		used := storedRequestTokens(t, probe, s.SessionID)
		probe.Close()
		next := used + 40 + reserve
		if sysprompt.TierFor(next) == sysprompt.TierFor(window) {
			window = next
			break
		}
		window = next
	}
	rec := &recorder{}
	small := New(rec, big.store, big.model, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: window, OutputReserve: reserve}}}, nil)
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
func storedRequestTokens(t testing.TB, a *Agent, sessionID string) int {
	t.Helper()
	ctx := context.Background()
	sess, err := a.store.GetSession(ctx, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	mt := a.build.MeterFor(sess)
	view, err := a.build.ActiveView(ctx, &a.sessions.get(sessionID).req, mt.Counter)
	if err != nil {
		t.Fatal(err)
	}
	used := a.build.FixedTokens(&a.sessions.get(sessionID).req, sess, mt.Counter)
	for _, e := range request.ContextMessages(mt.Counter, a.build.SystemPrompt(&a.sessions.get(sessionID).req, sess), view)[1:] {
		used += e.Tokens
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

// FuzzCompactOnLoad loads stored sessions of every shape into windows of
// every size: no turns, one long turn (nothing to compact), many turns
// with tool output, a window smaller than the fixed prefix (system prompt
// and tool schemas), no window at all; with and without a client that
// advertises session.compaction. The load always succeeds without a panic,
// every compaction it starts is reported finished exactly once, no stored
// message is lost, and the view left is one a chat API accepts.
func FuzzCompactOnLoad(f *testing.F) {
	// turns, words per prompt, words of tool output, window, reserve,
	// words of system prompt, compaction capability.
	f.Add(uint8(0), uint16(0), uint16(0), uint16(2048), uint16(0), uint16(0), true)
	f.Add(uint8(1), uint16(1200), uint16(0), uint16(2048), uint16(0), uint16(0), true)    // issue 29: one long turn near 2,048
	f.Add(uint8(1), uint16(900), uint16(400), uint16(2048), uint16(256), uint16(0), true) // one turn with a tool call
	f.Add(uint8(12), uint16(200), uint16(300), uint16(4096), uint16(0), uint16(0), true)
	f.Add(uint8(12), uint16(200), uint16(300), uint16(4096), uint16(0), uint16(0), false)
	f.Add(uint8(3), uint16(50), uint16(50), uint16(300), uint16(0), uint16(2000), true) // window under the fixed prefix
	f.Add(uint8(5), uint16(100), uint16(0), uint16(1), uint16(65535), uint16(0), true)
	f.Add(uint8(5), uint16(100), uint16(100), uint16(0), uint16(0), uint16(0), true) // window unknown
	store, err := sqlite.Open(context.Background(), filepath.Join(f.TempDir(), "crow.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: "http://127.0.0.1:1", APIKey: "sk-test"}) // never called on load
	// The case of issue 29, measured: one long turn just over the
	// threshold of a window it still fits.
	const reserve = 256
	used := func() int {
		sid := "sess_measure"
		storeTurns(f, store, sid, f.TempDir(), 1, 900, 0)
		a := New(&recorder{}, store, model, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: 100000}}}, nil)
		defer a.Close()
		return storedRequestTokens(f, a, sid)
	}()
	f.Add(uint8(1), uint16(900), uint16(0), uint16(used+40+reserve), uint16(reserve), uint16(0), true)
	var n int
	f.Fuzz(func(t *testing.T, turns uint8, promptWords, toolWords, window, reserve, systemWords uint16, caps bool) {
		ctx := context.Background()
		turns, promptWords, toolWords, systemWords = turns%40, promptWords%3000, toolWords%3000, systemWords%3000
		n++
		sid := fmt.Sprintf("sess_load_%d", n)
		cwd := t.TempDir()
		msgs := storeTurns(t, store, sid, cwd, int(turns), int(promptWords), int(toolWords))
		cfg := Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: int(window), OutputReserve: int(reserve)}}}
		if systemWords > 0 {
			cfg.SystemPrompt = prose(7, int(systemWords))
		}
		rec := &recorder{}
		a := New(rec, store, model, cfg, nil)
		defer a.Close()
		init := &acp.InitializeRequest{ProtocolVersion: 1}
		if caps {
			init.ClientCapabilities = compactionCaps()
		}
		if _, err := a.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: sid, Cwd: cwd}); err != nil {
			t.Fatalf("load: %v", err)
		}
		started, finished := 0, 0
		rec.mu.Lock()
		for _, u := range rec.updates {
			if u.Other == nil {
				continue
			}
			cu, ok := acp.ParseCompactionUpdate(u.Other)
			switch {
			case !ok:
			case cu.Status == acp.CompactionInProgress:
				started++
			case cu.Status == acp.CompactionCompleted, cu.Status == acp.CompactionFailed:
				finished++
			}
		}
		rec.mu.Unlock()
		if !caps && started+finished > 0 {
			t.Fatal("compaction_update sent to a client that did not advertise session.compaction")
		}
		if started != finished {
			t.Fatalf("%d compactions started, %d reported finished", started, finished)
		}
		all, err := store.Messages(ctx, sid, persistence.MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		kept := map[int64]bool{}
		for _, m := range all {
			kept[m.ID] = true
		}
		for _, m := range msgs {
			if !kept[m.ID] {
				t.Fatalf("message %d (%s) lost by the load", m.ID, m.Role)
			}
		}
		view, err := store.Messages(ctx, sid, persistence.MessageFilter{ActiveOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := compaction.CheckSequence(view); err != nil {
			t.Fatalf("view after the load: %v", err)
		}
	})
}

// storeTurns stores a session of turns: a prompt of promptWords, a tool
// call with toolWords of output (none when 0), a short reply.
func storeTurns(t testing.TB, store Store, sid, cwd string, turns, promptWords, toolWords int) []*persistence.Message {
	t.Helper()
	ctx := context.Background()
	if err := store.CreateSession(ctx, &persistence.Session{ID: sid, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	var msgs []*persistence.Message
	for i := range turns {
		msgs = append(msgs, &persistence.Message{Role: persistence.RoleUser, Content: prose(i, promptWords), Status: persistence.StatusComplete})
		if toolWords > 0 {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				&persistence.Message{Role: persistence.RoleAssistant, Status: persistence.StatusComplete,
					ToolCalls: []persistence.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"a.go"}`}}},
				&persistence.Message{Role: persistence.RoleTool, ToolCallID: id, Content: prose(i+1, toolWords), Status: persistence.StatusComplete})
		}
		msgs = append(msgs, &persistence.Message{Role: persistence.RoleAssistant, Content: prose(i+2, 20), Status: persistence.StatusComplete})
	}
	if len(msgs) > 0 {
		if err := store.AppendMessages(ctx, sid, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	return msgs
}
