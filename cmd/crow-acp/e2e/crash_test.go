package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/framelog"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// crashTurns is how many prompt turns TestCrashRecovery plays (CI: 200;
// make bench sets CROW_CRASH_TURNS higher).
func crashTurns(t *testing.T) int {
	if v := os.Getenv("CROW_CRASH_TURNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CROW_CRASH_TURNS=%q", v)
		}
		return n
	}
	return 200
}

// promptOutcome is what the client saw of one prompt.
type promptOutcome struct {
	text     string // the prompt, unique per turn
	updates  int    // session/update frames of the turn received
	chunks   string // agent_message_chunk text received
	answered bool   // the response arrived
}

// TestCrashRecovery runs the real binary against the fake model on
// 127.0.0.1 and kills it with SIGKILL at random points (mid-stream, between
// turns, around tool calls, during a session/load's replay or right after
// its response) until crashTurns prompts were sent. After every
// kill it checks, on the database file: integrity_check passes; every
// answered prompt is fully stored; every prompt whose first update reached
// the client has its user message; a cut reply is kept (and is marked
// interrupted once the session is reopened); the messages table equals its
// rebuild from the event log; the frame log reads back (framelog.Frames),
// every frame whole. The next process must load the session, and
// at the end every model request the fake model received must be valid: no
// tool call without its result.
func TestCrashRecovery(t *testing.T) {
	turns := crashTurns(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CROW_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (CROW_CRASH_SEED=%d reproduces it), %d turns", seed, seed, turns)
	rng := rand.New(rand.NewPCG(seed, 1))

	model := fakemodel.Start()
	t.Cleanup(model.Close)
	words := strings.TrimSpace(strings.Repeat("lorem ipsum dolor sit amet ", 3))
	model.SetFallback(fakemodel.Reply{Text: words, DelayMS: 1})
	var script []fakemodel.Reply
	for i := range turns * 3 {
		if i%3 == 0 {
			// A tool the agent does not have: it stores an error result
			// and calls the model again.
			script = append(script, fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprint("call_", i), Name: "no_such_tool", Arguments: `{"n":1}`}}, DelayMS: 1})
		} else {
			script = append(script, fakemodel.Reply{Text: words, DelayMS: 1})
		}
	}
	model.Enqueue(script...)

	dir := t.TempDir()
	db := filepath.Join(dir, "crow.db")
	cwd := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": db, "CROW_LOG_LEVEL": "warn"}
	deadline := time.Now().Add(max(4*time.Minute, time.Duration(turns)*1200*time.Millisecond))

	var sid string
	var all []promptOutcome
	kills := 0
	for sent := 0; sent < turns; {
		if time.Now().After(deadline) {
			t.Fatalf("bounded run: stopped after %d turns and %d kills", sent, kills)
		}
		p := startProc(t, env)
		p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
		p.until("0", 10*time.Second)
		if sid == "" {
			p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
			sid = sessionIDOf(t, p.until("1", 10*time.Second))
		} else {
			if rng.IntN(4) == 0 {
				// A kill during a load: in its replay, or after its
				// response, before the frame log recorded the load.
				p.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
				for n, stop := 0, rng.IntN(12); n < stop; n++ {
					if f := p.recv(10 * time.Second); bytes.HasPrefix(f, []byte(`{"jsonrpc":"2.0","id":1,`)) {
						break
					}
				}
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
				p.kill()
				kills++
				checkAfterKill(t, db, sid, all)
				p = startProc(t, env)
				p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
				p.until("0", 10*time.Second)
			}
			// The session must load after any crash.
			p.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
			frames := p.until("1", 10*time.Second)
			if last := frames[len(frames)-1]; !strings.Contains(string(last), `"result"`) {
				t.Fatalf("session/load after kill %d: %s", kills, last)
			}
			checkRepaired(t, db, sid, all)
		}
		// Play turns until the kill point: a random turn, after a random
		// number of its frames, plus a random sub-millisecond delay.
		killTurn := rng.IntN(4)
		killAfter := rng.IntN(14)
		for k := 0; sent < turns; k++ {
			out := promptOutcome{text: fmt.Sprintf("turn %d", sent)}
			id := strconv.Itoa(100 + k)
			p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + out.text + `"}]}}`)
			sent++
			killing := k == killTurn
			for n := 0; ; n++ {
				if killing && n == killAfter {
					break
				}
				f := p.recv(10 * time.Second)
				var fr struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Update struct {
							SessionUpdate string `json:"sessionUpdate"`
							// An object for message chunks, an array
							// for tool calls.
							Content json.RawMessage `json:"content"`
						} `json:"update"`
					} `json:"params"`
					Error json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(f, &fr); err != nil {
					t.Fatalf("bad frame %q", f)
				}
				if fr.Method == "session/update" {
					// Updates of the turn; others (available commands,
					// usage after a load) may arrive meanwhile.
					switch fr.Params.Update.SessionUpdate {
					case "agent_message_chunk":
						out.updates++
						var c struct {
							Text string `json:"text"`
						}
						_ = json.Unmarshal(fr.Params.Update.Content, &c)
						out.chunks += c.Text
					case "agent_thought_chunk", "tool_call", "tool_call_update", "plan":
						out.updates++
					}
					continue
				}
				if string(fr.ID) == id {
					if fr.Error != nil {
						t.Fatalf("turn %q failed: %s", out.text, f)
					}
					out.answered = true
					break
				}
			}
			all = append(all, out)
			if killing {
				break
			}
		}
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		p.kill()
		kills++
		checkAfterKill(t, db, sid, all)
	}

	finalTurn(t, env, sid, cwd, all, model)
	t.Logf("%d turns, %d kills, %d model requests", len(all), kills, len(model.Requests()))
}

// finalTurn: a last process loads the session and runs one more turn, so
// the context rebuilt after all the crashes is accepted; no reply is left
// streaming, and every request the model received is valid.
func finalTurn(t *testing.T, env map[string]string, sid, cwd string, all []promptOutcome, model *fakemodel.Server) {
	t.Helper()
	p := startProc(t, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	p.until("0", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
	p.until("1", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"final"}]}}`)
	if last := p.until("2", 20*time.Second); !strings.Contains(string(last[len(last)-1]), `"stopReason"`) {
		t.Fatalf("final turn: %s", last[len(last)-1])
	}
	p.close()
	checkRepaired(t, env["CROW_DB"], sid, all)
	checkModelRequests(t, model.Requests())
}

// checkAfterKill checks the database after a SIGKILL.
func checkAfterKill(t *testing.T, db, sid string, all []promptOutcome) {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var ok string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check after kill: %q, %v", ok, err)
	}
	raw.Close()

	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	defer s.Close()
	msgs, err := s.Messages(ctx, sid, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]int{}
	for _, m := range msgs {
		if m.Role == persistence.RoleUser {
			users[m.Content]++
		}
	}
	for _, o := range all {
		switch n := users[o.text]; {
		case n > 1:
			t.Fatalf("%q stored %d times", o.text, n)
		case n == 0 && (o.answered || o.updates > 0):
			t.Fatalf("%q: the client saw %d updates (answered %v) but the user message is not stored", o.text, o.updates, o.answered)
		}
		if !o.answered {
			continue
		}
		turn := turnMessages(msgs, o.text)
		last := turn[len(turn)-1]
		if last.Role != persistence.RoleAssistant || last.Status != persistence.StatusComplete || len(last.ToolCalls) > 0 {
			t.Fatalf("answered %q: the turn ends with %s/%s, want a complete reply", o.text, last.Role, last.Status)
		}
		for i, m := range turn {
			for _, c := range m.ToolCalls {
				if i+1 >= len(turn) || turn[i+1].ToolCallID != c.ID {
					t.Fatalf("answered %q: tool call %s has no stored result", o.text, c.ID)
				}
			}
		}
	}
	// The cut reply: what was saved and what the client saw agree.
	if o := all[len(all)-1]; !o.answered && o.chunks != "" {
		var saved string
		for _, m := range turnMessages(msgs, o.text) {
			if m.Role == persistence.RoleAssistant && len(m.ToolCalls) == 0 {
				saved = m.Content
			}
		}
		if saved == "" || !(strings.HasPrefix(o.chunks, saved) || strings.HasPrefix(saved, o.chunks)) {
			t.Fatalf("cut reply of %q: saved %q, client saw %q", o.text, saved, o.chunks)
		}
	}
	r, err := projection.Verify(ctx, s, sid)
	if err != nil || !r.OK() {
		t.Fatalf("rebuild after kill: %v %q", err, r.Differences)
	}
	// The frame log reads back: packed runs and load records whole.
	evs, err := s.Events(ctx, sid, persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	frames, err := framelog.Frames(evs)
	if err != nil {
		t.Fatalf("frames after kill: %v", err)
	}
	for _, f := range frames {
		if !json.Valid(f.Body) {
			t.Fatalf("frames after kill: event %d holds %.60q", f.Seq, f.Body)
		}
	}
}

// checkRepaired checks, after a process reopened the session, that no reply
// is left marked streaming.
func checkRepaired(t *testing.T, db, sid string, all []promptOutcome) {
	t.Helper()
	msgs := crowtest.Messages(t, db, sid)
	for _, m := range msgs {
		if m.Status == persistence.StatusStreaming {
			t.Fatalf("message seq %d still marked streaming after the session was reopened", m.Seq)
		}
	}
}

// turnMessages are the messages from the user message text up to the next
// user message, without compaction summaries (stored after the turn that
// set them off, they summarise older turns).
func turnMessages(msgs []persistence.Message, text string) []persistence.Message {
	for i, m := range msgs {
		if m.Role == persistence.RoleUser && m.Content == text {
			turn := []persistence.Message{m}
			for _, n := range msgs[i+1:] {
				if n.Role == persistence.RoleUser {
					break
				}
				if n.Role != persistence.RoleSummary {
					turn = append(turn, n)
				}
			}
			return turn
		}
	}
	return nil
}

// checkModelRequests: in every request, each assistant tool call is answered
// by a tool message before the next assistant or user message.
func checkModelRequests(t *testing.T, reqs []json.RawMessage) {
	t.Helper()
	for n, body := range reqs {
		var req struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("request %d: %v", n+1, err)
		}
		pending := map[string]bool{}
		for _, m := range req.Messages {
			switch m.Role {
			case "tool":
				if !pending[m.ToolCallID] {
					t.Fatalf("request %d: tool result %s without its call", n+1, m.ToolCallID)
				}
				delete(pending, m.ToolCallID)
			default:
				if len(pending) > 0 {
					t.Fatalf("request %d: tool calls %v without results before a %s message", n+1, pending, m.Role)
				}
				for _, c := range m.ToolCalls {
					pending[c.ID] = true
				}
			}
		}
		if len(pending) > 0 {
			t.Fatalf("request %d ends with unanswered tool calls %v", n+1, pending)
		}
	}
}

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
	open := func(env map[string]string) *proc {
		p := startProc(t, env)
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
		before := crowtest.Messages(t, db, sid)
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

	finalTurn(t, env, sid, cwd, all, model)
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
	for _, e := range crowtest.Events(t, db, sid) {
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
	for _, m := range crowtest.Messages(t, db, sid) {
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
