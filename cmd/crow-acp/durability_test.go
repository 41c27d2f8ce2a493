package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/persistence/projection"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestFixturesRebuild runs every fixture scenario in-process and then proves
// that each session's messages and compactions, rebuilt from its event log,
// equal the live tables, and that the log holds the session's frames.
func TestFixturesRebuild(t *testing.T) {
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := startModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		t.Cleanup(func() { verifyAllSessions(t, env.DBPath) })
		start := pipeAgent(f)
		return env, start, m
	})
}

// verifyAllSessions checks every session in the database at path.
func verifyAllSessions(t *testing.T, path string) {
	t.Helper()
	if t.Failed() {
		return
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: persistence.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range sessions {
		r, err := projection.Verify(ctx, s, sess.ID)
		if err != nil {
			t.Fatalf("verify %s: %v", sess.ID, err)
		}
		for _, d := range r.Differences {
			t.Errorf("%s: %s", sess.ID, d)
		}
		evs, err := s.Events(ctx, sess.ID, persistence.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[persistence.EventKind]int{}
		for _, e := range evs {
			kinds[e.Kind]++
		}
		// A fork starts from a copy (session_imported): until it is used
		// it has no frames, and its compactions' lifecycle events stay in
		// the source's stream.
		copied := kinds[persistence.EventSessionImported] > 0
		if r.Frames == 0 && !copied {
			t.Errorf("%s: no frames in its event log", sess.ID)
		}
		// Compactions leave their lifecycle events beside the projection.
		comps, err := s.Compactions(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(comps) > 0 && !copied {
			if kinds[persistence.EventCompactionStarted] == 0 || kinds[persistence.EventCompactionCompleted] == 0 {
				t.Errorf("%s: %d compactions but lifecycle events %v", sess.ID, len(comps), kinds)
			}
		}
		t.Logf("%s: %d messages, %d events, %d frames", sess.ID, r.Messages, r.Events, r.Frames)
	}
}

// buildBinary builds crow-acp once per test binary (a link of the 45 MB
// binary takes seconds: every test that runs it shares this one). TestMain
// removes it.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "crow-acp-bin-")
	if err != nil {
		return "", err
	}
	binDir.Store(&dir)
	bin := filepath.Join(dir, "crow-acp")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// binDir is where buildBinary built, if it ran.
var binDir atomic.Pointer[string]

func TestMain(m *testing.M) {
	if os.Getenv(measureArgvEnv) != "" {
		os.Exit(runMeasured())
	}
	code := m.Run()
	if dir := binDir.Load(); dir != nil {
		os.RemoveAll(*dir)
	}
	os.Exit(code)
}

func testBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// procSetup is the start of the tests that drive crow-acp processes: the
// fake model, a fresh database, the environment naming both, and a project
// directory.
func procSetup(t *testing.T) (model *fakemodel.Server, db string, env map[string]string, cwd string) {
	t.Helper()
	model = fakemodel.Start()
	t.Cleanup(model.Close)
	db = filepath.Join(t.TempDir(), "crow.db")
	return model, db, map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": db}, t.TempDir()
}

// onBothStores runs test against a fresh SQLite file (dsn "") and a fresh
// PostgreSQL schema (skipped without one); procSetupOn uses the dsn.
func onBothStores(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, "") })
	t.Run("postgres", func(t *testing.T) { test(t, pgtest.URL(t)) })
}

// procSetupOn is procSetup on the store dsn names ("": a SQLite file).
func procSetupOn(t *testing.T, dsn string) (model *fakemodel.Server, db string, env map[string]string, cwd string) {
	t.Helper()
	model, db, env, cwd = procSetup(t)
	if dsn != "" {
		db, env["CROW_DB"] = dsn, dsn
	}
	return model, db, env, cwd
}

// TestFrameLogFidelity sends frames with unknown fields, _meta, and string,
// integer and non-canonical numeric ids, and checks that the event log holds
// every frame in and out byte for byte, in order, with the right kinds.
func TestFrameLogFidelity(t *testing.T) {
	bin := testBinary(t)
	model, db, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "two words"})
	p := startProc(t, bin, env)

	var in, out []string
	exchange := func(line, id string) {
		t.Helper()
		in = append(in, line)
		p.send(line)
		if id == "" {
			return
		}
		for _, f := range p.until(id, 10*time.Second) {
			out = append(out, string(f))
		}
	}
	exchange(`{"jsonrpc":"2.0","id":"init-ü","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false},"_meta":{"vendor.x":[1,2.50,1e3]}},"unknownField":{"nested":null}},"_meta":{"top":true}}`, `"init-ü"`)
	exchange(`{"jsonrpc":"2.0","id":1.0,"method":"session/new","params":{"cwd":`+strconv.Quote(cwd)+`,"mcpServers":[],"_meta":{"k":"v"}}}`, `1.0`)
	var created struct {
		Result struct{ SessionID string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(out[len(out)-1]), &created); err != nil || created.Result.SessionID == "" {
		t.Fatalf("session/new: %s", out[len(out)-1])
	}
	sid := created.Result.SessionID
	exchange(`{"jsonrpc":"2.0","method":"_vendor/ping","params":{"_meta":{"n":1},"sessionId":"`+sid+`"}}`, "")
	exchange(`{"jsonrpc":"2.0","id":"x","method":"vendor/unknown","params":{"a":[]}}`, `"x"`)
	exchange(`{"jsonrpc":"2.0","id":  42 ,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi","_meta":{"m":1}}],"_meta":{"trace":"abc"}}}`, `42`)
	exchange(`{not json`, `null`)
	p.close()

	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessEvents, err := s.Events(ctx, sid, persistence.EventFilter{})
	if err != nil || len(sessEvents) == 0 {
		t.Fatalf("session events: %d, %v", len(sessEvents), err)
	}
	connEvents, err := s.Events(ctx, sessEvents[0].ConnectionID, persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// Each stream's frames, then all in commit order.
	framesOf := map[int64][][]byte{}
	budget := persistence.NewBudget(persistence.MaxDecoded)
	for _, evs := range [][]persistence.Event{connEvents, sessEvents} {
		for _, e := range evs {
			if framesOf[e.ID], err = e.Frames(budget); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := append(connEvents, sessEvents...)
	slices.SortFunc(all, func(a, b persistence.Event) int { return cmp.Compare(a.ID, b.ID) })
	var gotIn, gotOut []string
	kinds := map[string]persistence.EventKind{}
	for _, e := range all {
		for _, f := range framesOf[e.ID] {
			switch e.Direction {
			case persistence.DirIn:
				gotIn = append(gotIn, string(f))
			case persistence.DirOut:
				gotOut = append(gotOut, string(f))
			}
			kinds[string(f)] = e.Kind
		}
	}
	if !slices.Equal(gotIn, in) {
		t.Errorf("inbound frames differ:\n got %q\nwant %q", gotIn, in)
	}
	if !slices.Equal(gotOut, out) {
		t.Errorf("outbound frames differ:\n got %q\nwant %q", gotOut, out)
	}
	for body, want := range map[string]persistence.EventKind{
		in[0]: persistence.EventRequest, in[2]: persistence.EventNotification, in[5]: persistence.EventInvalid,
		out[0]: persistence.EventResponse,
	} {
		if kinds[body] != want {
			t.Errorf("kind of %.60s = %q, want %q", body, kinds[body], want)
		}
	}
	// The turn's frames and lifecycle carry its number.
	var lifecycle []string
	for _, e := range sessEvents {
		if !e.Kind.IsFrame() {
			lifecycle = append(lifecycle, fmt.Sprintf("%s@%d", e.Kind, e.Turn))
		}
	}
	want := []string{"session_created@0", "turn_started@1", "message_appended@1", "message_appended@1", "message_updated@1", "turn_completed@1", "session_closed@0"}
	if !slices.Equal(lifecycle, want) {
		t.Errorf("lifecycle %v, want %v", lifecycle, want)
	}
}

// leaseClient drives one crow-acp process for the lease tests.
type leaseClient struct {
	t  *testing.T
	p  *agentProc
	id int
}

func newLeaseClient(t *testing.T, bin string, env map[string]string) *leaseClient {
	c := &leaseClient{t: t, p: startProc(t, bin, env)}
	c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	return c
}

// call sends a request and returns its response frame.
func (c *leaseClient) call(method, params string) string {
	c.t.Helper()
	c.id++
	id := strconv.Itoa(c.id)
	c.p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	frames := c.p.until(id, 10*time.Second)
	return string(frames[len(frames)-1])
}

func (c *leaseClient) prompt(sid, text string) string {
	return c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"`+text+`"}]}`)
}

func (c *leaseClient) load(sid, cwd string) string {
	return c.call("session/load", `{"sessionId":"`+sid+`","cwd":`+strconv.Quote(cwd)+`,"mcpServers":[]}`)
}

// newSession creates a session and returns its id.
func (c *leaseClient) newSession(cwd string) string {
	c.t.Helper()
	return c.newSessionWith(cwd, "[]")
}

// newSessionWith creates a session with these MCP servers (JSON).
func (c *leaseClient) newSessionWith(cwd, mcpServers string) string {
	c.t.Helper()
	res := c.call("session/new", `{"cwd":`+strconv.Quote(cwd)+`,"mcpServers":`+mcpServers+`}`)
	var created struct {
		Result struct{ SessionID string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(res), &created); err != nil || created.Result.SessionID == "" {
		c.t.Fatalf("session/new: %s", res)
	}
	return created.Result.SessionID
}

// startPrompt sends a prompt without waiting; it returns the request id.
func (c *leaseClient) startPrompt(sid, text string) string {
	c.id++
	id := strconv.Itoa(c.id)
	c.p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + text + `"}]}}`)
	return id
}

// firstChunk waits for the first streamed reply chunk of a running turn.
func (c *leaseClient) firstChunk() {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if strings.Contains(string(c.p.recv(time.Until(deadline))), `"agent_message_chunk"`) {
			return
		}
	}
}

// storedLines lists a session's messages as role:content[status].
func storedLines(t *testing.T, db, sid string) []string {
	t.Helper()
	var out []string
	for _, m := range storedMessages(t, db, sid) {
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
	bin := testBinary(t)
	model, db, env, cwd := procSetup(t)

	a := newLeaseClient(t, bin, env)
	sid := a.newSession(cwd)
	b := newLeaseClient(t, bin, env)
	if res := b.load(sid, cwd); !strings.Contains(res, `"result"`) {
		t.Fatalf("second process load: %s", res)
	}
	model.Enqueue(fakemodel.Reply{Text: "reply one"}, fakemodel.Reply{Text: "reply two"},
		fakemodel.Reply{Text: "reply three"}, fakemodel.Reply{Text: "reply four"})
	for i, turn := range []struct {
		c    *leaseClient
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
	verifyAllSessions(t, db)
}

// TestLeaseStaleProcess (issue 14 case 5): a process stopped (SIGSTOP, as a
// laptop asleep) in the middle of streaming a reply loses its lease; another
// process takes the session and runs a turn. When the first resumes
// (SIGCONT) its turn ends with a clear error and changes nothing: its
// reply stays as saved before the pause (marked interrupted by the new
// holder), and nothing of it lands after the other's turn.
func TestLeaseStaleProcess(t *testing.T) {
	bin := testBinary(t)
	model, db, env, cwd := procSetup(t)

	a := newLeaseClient(t, bin, env)
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
	b := newLeaseClient(t, bin, env)
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
	verifyAllSessions(t, db) // a's reply: grown by a, interrupted by b
}

// TestLeaseStaleTakenOver: the lease of a process killed with SIGKILL is
// taken over at once (same host, dead pid); a lease of another host is
// taken over once it has expired, and refused before.
func TestLeaseStaleTakenOver(t *testing.T) {
	bin := testBinary(t)
	model, db, env, cwd := procSetup(t)

	a := newLeaseClient(t, bin, env)
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

	b := newLeaseClient(t, bin, env)
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
	c := newLeaseClient(t, bin, env)
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
