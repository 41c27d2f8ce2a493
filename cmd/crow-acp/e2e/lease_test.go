package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// storedLines lists a session's messages as role:content[status].
func storedLines(t *testing.T, db, sid string) []string {
	t.Helper()
	var out []string
	for _, m := range crowtest.Messages(t, db, sid) {
		out = append(out, string(m.Role)+":"+m.Content+"["+string(m.Status)+"]")
	}
	return out
}

// TestLeaseTwoProcessesTakeTurns (issue 14 case 6): one session open in
// two processes (two editor windows on one thread) takes prompts from both
// in turn, and each process's model request holds the other's turns. Only
// while a turn runs is the session locked: a prompt in the other process
// is then refused with a clear error naming the holder.
func TestLeaseTwoProcessesTakeTurns(t *testing.T) {
	model, db, env, cwd := procSetup(t)

	a := startClient(t, env)
	sid := a.newSession(cwd)
	b := startClient(t, env)
	if res := b.load(sid, cwd); !strings.Contains(res, `"result"`) {
		t.Fatalf("second process load: %s", res)
	}
	model.Enqueue(fakemodel.Reply{Text: "reply one"}, fakemodel.Reply{Text: "reply two"},
		fakemodel.Reply{Text: "reply three"}, fakemodel.Reply{Text: "reply four"})
	for i, turn := range []struct {
		c    *client
		text string
	}{{a, "prompt one"}, {b, "prompt two"}, {a, "prompt three"}, {b, "prompt four"}} {
		if res := turn.c.prompt(sid, turn.text); !strings.Contains(res, `"end_turn"`) {
			t.Fatalf("turn %d (%s): %s", i+1, turn.text, res)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	for i, want := range [][]string{
		{"prompt one"},
		{"prompt one", "reply one", "prompt two"},
		{"prompt two", "reply two", "prompt three"},
		{"prompt three", "reply three", "prompt four"},
	} {
		for _, w := range want {
			if !strings.Contains(string(reqs[i]), w) {
				t.Errorf("model request %d lacks %q", i+1, w)
			}
		}
	}

	// While a's turn runs, b's prompt is refused, naming a; after a's turn
	// ends (cancelled here), b prompts again.
	model.Enqueue(fakemodel.Reply{Text: "a long answer that stalls", StallAfter: 1}, fakemodel.Reply{Text: "reply six"})
	running := a.startPrompt(sid, "prompt five")
	a.firstChunk()
	res := b.prompt(sid, "refused")
	var refused struct {
		Error struct {
			Code    int
			Message string
		}
	}
	_ = json.Unmarshal([]byte(res), &refused)
	pid := strconv.Itoa(a.p.cmd.Process.Pid)
	if refused.Error.Code != -32600 || !strings.Contains(refused.Error.Message, "another crow-acp process (pid "+pid) {
		t.Fatalf("prompt during the other's turn: %s; want -32600 naming pid %s", res, pid)
	}
	a.p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	if frames := a.p.until(running, 10*time.Second); !strings.Contains(string(frames[len(frames)-1]), `"cancelled"`) {
		t.Fatalf("cancelled turn: %s", frames[len(frames)-1])
	}
	if res := b.prompt(sid, "prompt six"); !strings.Contains(res, `"end_turn"`) {
		t.Fatalf("after the other's turn: %s", res)
	}
	a.p.close()
	b.p.close()

	var users []string
	for _, m := range storedLines(t, db, sid) {
		if strings.HasPrefix(m, "user:") {
			users = append(users, m)
		}
	}
	want := []string{"user:prompt one[complete]", "user:prompt two[complete]", "user:prompt three[complete]",
		"user:prompt four[complete]", "user:prompt five[complete]", "user:prompt six[complete]"}
	if !slices.Equal(users, want) {
		t.Errorf("stored prompts %q, want %q", users, want)
	}
	// Both processes wrote the session (appended and updated replies as
	// deltas of what the other left): its tables still equal their rebuild.
	crowtest.VerifySessions(t, db)
}

// TestLeaseStaleProcess (issue 14 case 5): a process stopped (SIGSTOP, as a
// laptop asleep) in the middle of streaming a reply loses its lease; another
// process takes the session and runs a turn. When the first resumes
// (SIGCONT) its turn ends with a clear error and changes nothing: its
// reply stays as saved before the pause (marked interrupted by the new
// holder), and nothing of it lands after the other's turn.
func TestLeaseStaleProcess(t *testing.T) {
	model, db, env, cwd := procSetup(t)

	a := startClient(t, env)
	sid := a.newSession(cwd)
	model.Enqueue(fakemodel.Reply{Text: "one two three four five six seven eight", DelayMS: 100},
		fakemodel.Reply{Text: "b's reply"})
	running := a.startPrompt(sid, "a's prompt")
	a.firstChunk()
	if err := a.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = a.p.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	// The TTL passes without a heartbeat (moved past in the database
	// rather than waited for).
	s, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.GetLease(context.Background(), sid)
	if err != nil || l.PID != a.p.cmd.Process.Pid {
		t.Fatalf("a's lease while its turn runs: %+v, %v", l, err)
	}
	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE session_leases SET expires_at = 0 WHERE session_id = ?`, sid); err != nil {
		t.Fatal(err)
	}
	b := startClient(t, env)
	b.load(sid, cwd)
	if res := b.prompt(sid, "b's prompt"); !strings.Contains(res, `"end_turn"`) {
		t.Fatalf("b's turn while a sleeps: %s", res)
	}
	before := storedLines(t, db, sid)

	if err := a.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	frames := a.p.until(running, 20*time.Second)
	if res := string(frames[len(frames)-1]); !strings.Contains(res, "lost the session's lock") {
		t.Fatalf("a's turn after it resumed: %s", res)
	}
	a.p.close()
	b.p.close()
	after := storedLines(t, db, sid)
	if !slices.Equal(after, before) {
		t.Errorf("the resumed process changed the session:\n got %q\nwant %q", after, before)
	}
	if len(after) != 4 || after[0] != "user:a's prompt[complete]" || !strings.HasSuffix(after[1], "[interrupted]") ||
		after[2] != "user:b's prompt[complete]" || after[3] != "assistant:b's reply[complete]" {
		t.Errorf("stored %q; want a's prompt, a's reply interrupted, then b's turn", after)
	}
	crowtest.VerifySessions(t, db) // a's reply: grown by a, interrupted by b
}

// TestLeaseStaleTakenOver: the lease of a process killed with SIGKILL is
// taken over at once (same host, dead pid); a lease of another host is
// taken over once it has expired, and refused before.
func TestLeaseStaleTakenOver(t *testing.T) {
	model, db, env, cwd := procSetup(t)

	a := startClient(t, env)
	sid := a.newSession(cwd)
	model.Enqueue(fakemodel.Reply{Text: "cut short by a crash", StallAfter: 1})
	a.startPrompt(sid, "before the crash")
	a.firstChunk()
	a.p.kill() // mid-turn: no chance to release the lease

	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if l, err := s.GetLease(ctx, sid); err != nil || l.PID != a.p.cmd.Process.Pid {
		t.Fatalf("the killed process's lease: %+v, %v", l, err)
	}

	b := startClient(t, env)
	b.load(sid, cwd)
	if res := b.prompt(sid, "after the crash"); !strings.Contains(res, `"end_turn"`) {
		t.Fatalf("dead process's lease not taken over: %s", res)
	}
	b.p.close()

	// A live lease of another host, then the same lease expired.
	other := &persistence.Lease{SessionID: sid, Owner: "conn_elsewhere", PID: 1, Host: "elsewhere.example"}
	if err := s.AcquireLease(ctx, other, time.Hour, ""); err != nil {
		t.Fatal(err)
	}
	c := startClient(t, env)
	c.load(sid, cwd)
	if res := c.prompt(sid, "refused"); !strings.Contains(res, "elsewhere.example") || !strings.Contains(res, `-32600`) {
		t.Fatalf("live lease of another host: %s", res)
	}
	if err := s.AcquireLease(ctx, other, time.Millisecond, ""); err != nil { // renewal with a tiny TTL
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if res := c.prompt(sid, "taken over"); !strings.Contains(res, `"end_turn"`) {
		t.Fatalf("expired lease of another host not taken over: %s", res)
	}
	c.p.close()
	if l, err := s.GetLease(ctx, sid); err != nil || l.ExpiresAt.After(time.Now()) {
		t.Errorf("lease after a clean exit: %+v, %v; want it ended", l, err)
	}
}
