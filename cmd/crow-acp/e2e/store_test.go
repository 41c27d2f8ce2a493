package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// The store under a running server: locked, not a database, refusing
// writes, rewritten in place.

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`

// lockDatabase creates the SQLite file db and holds an exclusive lock on it
// (a rollback-journal transaction, as another program might): every other
// connection waits, as on a busy or hung disk, until release is called.
func lockDatabase(t *testing.T, db string) (release func()) {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+db+"?_journal_mode=DELETE")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE IF NOT EXISTS held (x)`, `BEGIN EXCLUSIVE`, `INSERT INTO held VALUES (1)`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		_, _ = conn.ExecContext(ctx, `ROLLBACK`)
		_ = conn.Close()
		_ = raw.Close()
	}
	t.Cleanup(release)
	return release
}

// TestInitializeWhileStoreBlocks: a database that does not answer (locked
// by another program; SQLite waits up to its 10 s busy timeout) does not
// hold back the answer to initialize (issue 30: it waited for the open and
// the connection's record). The first request that needs the store waits
// for it, and once the database answers, the frame log holds the
// connection's initialize frames, byte for byte, in order.
func TestInitializeWhileStoreBlocks(t *testing.T) {
	_, db, env, cwd := procSetup(t)
	release := lockDatabase(t, db)
	p := startProc(t, env)
	p.send(initializeLine)
	// Well under the busy timeout, and under the 2 s that reading the
	// cached context windows may wait for the store (read in the
	// background, not before serving).
	answer := p.recv(1800 * time.Millisecond)
	if !strings.Contains(string(answer), `"result"`) {
		t.Fatalf("initialize: %s", answer)
	}

	newSession := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, cwd)
	p.send(newSession)
	select {
	case f := <-p.lines:
		t.Fatalf("answered while the database is locked: %s", f)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	sid := sessionIDOf(t, p.until("2", 10*time.Second))
	p.close()

	evs := crowtest.Events(t, db, sid)
	if len(evs) == 0 {
		t.Fatal("the session has no events")
	}
	conn := crowtest.Events(t, db, evs[0].ConnectionID)
	var got []string
	budget := persistence.NewBudget(persistence.MaxDecoded)
	for _, e := range conn {
		frames, err := e.Frames(budget)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			got = append(got, string(e.Direction)+" "+string(f))
		}
	}
	want := []string{string(persistence.DirIn) + " " + initializeLine, string(persistence.DirOut) + " " + string(answer)}
	if len(got) < 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("the connection's frame log starts with\n%q\nwant\n%q", got, want)
	}
}

// TestStoreThatCannotOpen: a database that cannot be opened (not a SQLite
// file) no longer ends the process before initialize: session/new gets an
// error naming the database and the cause, the process keeps serving, and
// once the file is fixed the next session/new works.
func TestStoreThatCannotOpen(t *testing.T) {
	_, db, env, cwd := procSetup(t)
	if err := os.WriteFile(db, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, env)
	p.send(initializeLine)
	if f := p.recv(5 * time.Second); !strings.Contains(string(f), `"result"`) {
		t.Fatalf("initialize: %s", f)
	}
	newSession := func(id int) []byte {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, id, cwd))
		frames := p.until(fmt.Sprint(id), 15*time.Second)
		return frames[len(frames)-1]
	}
	for id := 2; id <= 3; id++ { // each request reports it; the process keeps going
		var r struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		f := newSession(id)
		if err := json.Unmarshal(f, &r); err != nil || r.Error == nil {
			t.Fatalf("session/new on a broken database: %s", f)
		}
		for _, part := range []string{"cannot open the session database " + db, "file is not a database"} {
			if !strings.Contains(r.Error.Message, part) {
				t.Errorf("error %q does not say %q", r.Error.Message, part)
			}
		}
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if f := newSession(4); !strings.Contains(string(f), `"sessionId"`) {
		t.Fatalf("session/new once the database is fixed: %s", f)
	}
	p.close()
}

// storeGrace is how long a process whose client has gone still waits for
// the store to open (cmd/crow-acp's storeGrace).
const storeGrace = 5 * time.Second

// TestExitWhileStoreBlocks: a client that leaves while the database still
// does not answer does not keep the process: it waits storeGrace for the
// open (to write the connection's record), then exits with status 1,
// saying why.
func TestExitWhileStoreBlocks(t *testing.T) {
	_, db, env, _ := procSetup(t)
	lockDatabase(t, db) // held past SQLite's 10 s busy timeout
	p := startProc(t, env)
	p.send(initializeLine)
	p.recv(3 * time.Second)
	start := time.Now()
	p.stdin.Close()
	for range p.lines {
	}
	var err error
	select {
	case err = <-p.waited:
	case <-time.After(9 * time.Second): // under the busy timeout
		t.Fatal("the process did not exit while the database was locked")
	}
	if d := time.Since(start); d < storeGrace-time.Second {
		t.Fatalf("exited after %s, before the grace of %s", d, storeGrace)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitError {
		t.Errorf("exit %v, want status %d", err, exitError)
	}
	if !strings.Contains(p.logs(), "crow-acp: "+backend.ErrAbandoned.Error()) {
		t.Errorf("stderr does not say why:\n%s", p.logs())
	}
}

// storeFault makes a real database refuse writes the way the regression
// cases' faults do (a full disk, a database made read-only, PostgreSQL
// restarting), from outside the process under test: triggers that fail
// while a row of crow_test_fault names their mode.
//   - "all": every write of the event log fails (the frame log's batches
//     and every write that records a projection event), as on a read-only
//     database or a server that is down.
//   - "big": an update of a message to more than bigText bytes fails, as
//     on a disk that is full or a file at its size limit, where small
//     writes still find room.
type storeFault struct {
	t    *testing.T
	exec func(string) error
}

const bigText = 2000

// newStoreFault installs the triggers in db (a SQLite path or a PostgreSQL
// URL), migrated first.
func newStoreFault(t *testing.T, db string) *storeFault {
	t.Helper()
	crowtest.WithStore(t, db, func(persistence.Store) error { return nil }) // migrated
	f := &storeFault{t: t}
	ctx := context.Background()
	var ddl []string
	if strings.HasPrefix(db, "postgres") {
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		f.exec = func(q string) error { _, err := conn.Exec(ctx, q); return err }
		ddl = []string{
			`CREATE TABLE crow_test_fault (mode text NOT NULL)`,
			`CREATE FUNCTION crow_test_fault_all() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
				IF EXISTS (SELECT 1 FROM crow_test_fault WHERE mode = 'all') THEN RAISE EXCEPTION 'injected fault: all writes'; END IF;
				RETURN NEW; END $$`,
			`CREATE FUNCTION crow_test_fault_big() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
				IF length(NEW.content) > ` + strconv.Itoa(bigText) + ` AND EXISTS (SELECT 1 FROM crow_test_fault WHERE mode = 'big') THEN
					RAISE EXCEPTION 'injected fault: no room'; END IF;
				RETURN NEW; END $$`,
			`CREATE TRIGGER crow_test_fault_all BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION crow_test_fault_all()`,
			`CREATE TRIGGER crow_test_fault_big BEFORE UPDATE ON messages FOR EACH ROW EXECUTE FUNCTION crow_test_fault_big()`,
		}
	} else {
		raw, err := sql.Open("sqlite3", db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		f.exec = func(q string) error { _, err := raw.Exec(q); return err }
		ddl = []string{
			`CREATE TABLE crow_test_fault (mode TEXT NOT NULL)`,
			`CREATE TRIGGER crow_test_fault_all BEFORE INSERT ON events
				WHEN EXISTS (SELECT 1 FROM crow_test_fault WHERE mode = 'all')
				BEGIN SELECT RAISE(ABORT, 'injected fault: all writes'); END`,
			`CREATE TRIGGER crow_test_fault_big BEFORE UPDATE ON messages
				WHEN length(NEW.content) > ` + strconv.Itoa(bigText) + ` AND EXISTS (SELECT 1 FROM crow_test_fault WHERE mode = 'big')
				BEGIN SELECT RAISE(ABORT, 'injected fault: no room'); END`,
		}
	}
	for _, q := range ddl {
		f.must(q)
	}
	return f
}

func (f *storeFault) must(q string) {
	f.t.Helper()
	if err := f.exec(q); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

// arm turns mode's fault on; "" turns every fault off.
func (f *storeFault) arm(mode string) {
	f.t.Helper()
	f.must(`DELETE FROM crow_test_fault`)
	if mode != "" {
		f.must(`INSERT INTO crow_test_fault (mode) VALUES ('` + mode + `')`)
	}
}

// faultedTurn runs one prompt whose reply streams for about a second, arms
// mode's fault once the reply's first chunk is shown, and checks the turn
// is answered with an error naming the save that failed.
func faultedTurn(t *testing.T, c *client, f *storeFault, sid, mode string) {
	t.Helper()
	id := c.startPrompt(sid, "talk")
	c.firstChunk()
	f.arm(mode)
	frames := c.p.until(id, 30*time.Second)
	var res struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(frames[len(frames)-1], &res); err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Code != -32603 || !strings.Contains(res.Error.Message, "Could not save reply") {
		t.Fatalf("a turn whose reply could not be stored answered %s, want -32603 saying the reply could not be saved", frames[len(frames)-1])
	}
}

// replyOf waits (up to 10 s) until the session's last message is no longer
// "streaming", and returns it.
func replyOf(t *testing.T, db, sid string) persistence.Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs := crowtest.Messages(t, db, sid)
		last := msgs[len(msgs)-1]
		if last.Status != persistence.StatusStreaming {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reply cut by the fault is still %q", last.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// verifySession runs `crow-acp sessions verify` on the session.
func verifySession(t *testing.T, db, sid string) {
	t.Helper()
	mustRun(t, map[string]string{"CROW_DB": db}, "sessions", "verify", sid)
}

// TestStoreFaultFramesLost (issue 37): the event log refuses every write
// while a reply streams (a database made read-only, PostgreSQL restarting),
// so the chunk frames sent meanwhile are dropped; the store answers again
// and the reply is marked failed. Its record must then carry its text,
// not leave it to frames the log never kept: sessions verify rebuilds the
// reply. The prompt is answered with an error, and nothing stays
// streaming.
func TestStoreFaultFramesLost(t *testing.T) {
	onBothStores(t, func(t *testing.T, dsn string) {
		model, db, env, cwd := procSetupOn(t, dsn)
		text := persistencetest.Prose(3, 12000)
		model.SetFallback(fakemodel.Reply{Text: text, Chunks: 40, DelayMS: 25})
		c := startClient(t, env)
		sid := c.newSession(cwd)
		f := newStoreFault(t, db)

		faultedTurn(t, c, f, sid, "all")
		f.arm("")
		if r := replyOf(t, db, sid); r.Status != persistence.StatusFailed || !strings.HasPrefix(text, r.Content) || r.Content == "" {
			t.Fatalf("after the fault the reply is %q with %d bytes, want failed with what was streamed", r.Status, len(r.Content))
		}
		if res := c.prompt(sid, "again"); !strings.Contains(res, `"result"`) {
			t.Fatalf("the session does not go on after the fault: %s", res)
		}
		c.p.close()
		verifySession(t, db, sid)
	})
}

// TestStoreFaultNoRoomForReply (issue 37): the store takes small writes but
// refuses the long reply's text (a full disk, a file at its size limit):
// the prompt is answered with an error, and the reply is marked failed
// with what was stored of it while the fault lasts (nothing stays
// streaming), then with all that was streamed once there is room.
func TestStoreFaultNoRoomForReply(t *testing.T) {
	onBothStores(t, func(t *testing.T, dsn string) {
		model, db, env, cwd := procSetupOn(t, dsn)
		text := persistencetest.Prose(4, 12000)
		model.SetFallback(fakemodel.Reply{Text: text, Chunks: 40, DelayMS: 25})
		c := startClient(t, env)
		sid := c.newSession(cwd)
		f := newStoreFault(t, db)

		faultedTurn(t, c, f, sid, "big")
		if r := replyOf(t, db, sid); r.Status != persistence.StatusFailed || len(r.Content) > bigText {
			t.Fatalf("while the store has no room the reply is %q with %d bytes, want failed with what was stored", r.Status, len(r.Content))
		}
		f.arm("")
		deadline := time.Now().Add(10 * time.Second)
		for r := replyOf(t, db, sid); len(r.Content) <= bigText; r = replyOf(t, db, sid) {
			if time.Now().After(deadline) {
				t.Fatalf("with room again the reply still has %d bytes, want what was streamed", len(r.Content))
			}
			if !strings.HasPrefix(text, r.Content) {
				t.Fatalf("the reply stored is not what was streamed: %.80q", r.Content)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.p.close()
		verifySession(t, db, sid)
	})
}

// Issue 37 item 5: `cp backup.db crow.db` while an editor runs rewrites the
// database file in place (truncated, then written again) while a
// session/load reads it. The loads answer, results or errors, and the
// process lives on: a read that mapped the file would die of SIGBUS.
func TestDatabaseRewrittenDuringLoads(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := crowtest.AgentEnv(t, m.URL(), nil)
	db := env["CROW_DB"]
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := persistencetest.FillLongSession(context.Background(), store, "long", 10_000); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	backup, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	p := startACP(t, env)
	p.Init()
	p.Load("long", cwd, nil) // the store is open
	stop := make(chan struct{})
	var copier sync.WaitGroup
	copier.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// As cp does: the same file truncated, then written again.
			_ = os.WriteFile(db, backup, 0o600)
		}
	})
	answered, failed := 0, 0
	for start := time.Now(); time.Since(start) < 8*time.Second || answered < 3; {
		_, err := p.LoadSession(p.Ctx(), &acp.LoadSessionRequest{SessionID: "long", Cwd: cwd, McpServers: []acp.McpServer{}})
		var rpc *acp.Error
		switch {
		case err == nil:
			answered++
		case errors.As(err, &rpc):
			answered++
			failed++
		default:
			close(stop)
			copier.Wait()
			t.Fatalf("session/load while the database file was rewritten: %v (the process died?)\n%s", err, crashOf(p.logs()))
		}
	}
	close(stop)
	copier.Wait()
	t.Logf("%d loads answered while the file was rewritten, %d of them errors", answered, failed)
	if _, err := p.Initialize(p.Ctx(), &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		t.Fatalf("the process stopped answering: %v\n%s", err, crashOf(p.logs()))
	}
	p.exit(t)
}

// crashOf is the line of a process's stderr that says how it crashed
// (SIGBUS: bus error, fatal error: ..., panic: ...), or its last lines.
func crashOf(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "SIG") || strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return l
		}
	}
	if len(stderr) > 2000 {
		stderr = "…" + stderr[len(stderr)-2000:]
	}
	return stderr
}
