package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestCrashDuringCompaction kills the real binary with SIGKILL while it
// compacts: a manual /compact, or the automatic compaction a small context
// window sets off in a turn, at a random moment (before the summary
// request, while the model streams the summary, around the store's write,
// after it). After every kill the checks of TestCrashRecovery hold
// (integrity, every answered turn stored whole, the messages table equal to
// its rebuild, the frame log readable), no message is lost or doubled by a
// half-done compaction (every message stored before it is still there,
// once), and the next process loads the session and answers a prompt.
func TestCrashDuringCompaction(t *testing.T) {
	bin := testBinary(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CROW_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (CROW_CRASH_SEED=%d reproduces it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))

	model := fakemodel.Start()
	t.Cleanup(model.Close)
	// Replies and summaries alike: ~1,500 characters in 50 chunks 2 ms
	// apart (~100 ms a request), so that kills land inside them.
	reply := strings.TrimSpace(strings.Repeat("the build passes again after the fix to the parser ", 30))
	model.SetFallback(fakemodel.Reply{Text: reply, Chunks: 50, DelayMS: 2})

	dir := t.TempDir()
	db := filepath.Join(dir, "crow.db")
	cwd := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": db, "CROW_LOG_LEVEL": "warn"}
	// A process with a small window compacts at the start of its first
	// turn: the history the others made does not fit it.
	small := map[string]string{"CROW_CONTEXT_WINDOW": "3000"}
	for k, v := range env {
		small[k] = v
	}
	deadline := time.Now().Add(2 * time.Minute)

	var sid string
	var all []promptOutcome
	open := func(env map[string]string) *agentProc {
		p := startProc(t, bin, env)
		p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
		p.until("0", 10*time.Second)
		if sid == "" {
			p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
			sid = sessionIDOf(t, p.until("1", 10*time.Second))
			return p
		}
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
		if frames := p.until("1", 10*time.Second); !strings.Contains(string(frames[len(frames)-1]), `"result"`) {
			t.Fatalf("session/load: %s", frames[len(frames)-1])
		}
		checkRepaired(t, db, sid, all)
		return p
	}
	const rounds = 10
	midway := 0 // kills that left a compaction started and not completed
	for round := 0; round < rounds; round++ {
		if time.Now().After(deadline) {
			t.Fatalf("bounded run: stopped after %d rounds", round)
		}
		// Answered turns make something to compact, then the prompt is
		// killed while it compacts with the model's summary: a /compact
		// after six turns (it keeps the last ten messages), or a turn in a
		// process with a small window, which compacted at load (without
		// the model) and answered one more turn.
		p := open(env)
		turn := func(k int) {
			text := fmt.Sprintf("round %d turn %d", round, k)
			id := strconv.Itoa(100 + k)
			p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + text + `"}]}}`)
			frames := p.until(id, 20*time.Second)
			if last := string(frames[len(frames)-1]); !strings.Contains(last, `"stopReason"`) {
				t.Fatalf("%s: %s", text, last)
			}
			all = append(all, promptOutcome{text: text, answered: true, updates: 1})
		}
		text := "/compact"
		if round%2 == 0 {
			for k := range 6 {
				turn(k)
			}
		} else {
			turn(0)
			turn(1)
			p.close()
			p = open(small)
			turn(2)
			text = fmt.Sprintf("round %d killed", round)
		}
		before := storedMessages(t, db, sid)
		asked := len(model.Requests())
		p.send(`{"jsonrpc":"2.0","id":200,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + text + `"}]}}`)
		// Killed while the summary streams (~100 ms) or just after it,
		// around the store's write: once the model has the request.
		for wait := time.Now().Add(time.Second); len(model.Requests()) == asked && time.Now().Before(wait); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(130_000)) * time.Microsecond)
		p.kill()
		if text != "/compact" {
			// What the client saw of it is not read: only that it is
			// stored at most once.
			all = append(all, promptOutcome{text: text})
		}
		checkAfterKill(t, db, sid, all)
		checkNothingLost(t, db, sid, before)
		if compactionCut(t, db, sid) {
			midway++
		}
	}

	finalTurn(t, bin, env, sid, cwd, all, model)
	s, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done, err := s.Compactions(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) == 0 {
		t.Fatal("no compaction was stored: the window never made the session compact, nothing was tested")
	}
	t.Logf("%d rounds, %d compactions stored, %d kills inside one", rounds, len(done), midway)
}

// compactionCut reports whether the session's last compaction started and
// did not complete.
func compactionCut(t *testing.T, db, sid string) bool {
	t.Helper()
	cut := false
	for _, e := range storedEvents(t, db, sid) {
		switch e.Kind {
		case persistence.EventCompactionStarted:
			cut = true
		case persistence.EventCompactionCompleted:
			cut = false
		}
	}
	return cut
}

// checkNothingLost: every message stored before (a compaction hides
// messages, it never deletes them) is still stored, once, with its text.
func checkNothingLost(t *testing.T, db, sid string, before []persistence.Message) {
	t.Helper()
	now := map[int64]persistence.Message{}
	for _, m := range storedMessages(t, db, sid) {
		if _, dup := now[m.ID]; dup {
			t.Fatalf("message %d stored twice", m.ID)
		}
		now[m.ID] = m
	}
	for _, m := range before {
		got, ok := now[m.ID]
		if !ok {
			t.Fatalf("message %d (seq %d, %s) is gone after the kill", m.ID, m.Seq, m.Role)
		}
		if m.Status != persistence.StatusStreaming && (got.Content != m.Content || got.Seq != m.Seq) {
			t.Fatalf("message %d changed its text or seq across the kill", m.ID)
		}
	}
}
