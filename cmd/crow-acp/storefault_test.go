package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

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
	withStore(t, db, func(persistence.Store) error { return nil }) // migrated
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
func faultedTurn(t *testing.T, c *leaseClient, f *storeFault, sid, mode string) {
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
		msgs := storedMessages(t, db, sid)
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
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return map[string]string{"CROW_DB": db, "HOME": t.TempDir()}[k] }
	if code := run(context.Background(), []string{"sessions", "verify", sid}, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr}, getenv); code != exitOK {
		t.Fatalf("sessions verify: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestStoreFaultFramesLost (issue 37): the event log refuses every write
// while a reply streams (a database made read-only, PostgreSQL restarting),
// so the chunk frames sent meanwhile are dropped; the store answers again
// and the reply is marked failed. Its record must then carry its text,
// not leave it to frames the log never kept: sessions verify rebuilds the
// reply. The prompt is answered with an error, and nothing stays
// streaming.
func TestStoreFaultFramesLost(t *testing.T) {
	bin := testBinary(t)
	onBothStores(t, func(t *testing.T, dsn string) {
		model, db, env, cwd := procSetupOn(t, dsn)
		text := persistencetest.Prose(3, 12000)
		model.SetFallback(fakemodel.Reply{Text: text, Chunks: 40, DelayMS: 25})
		c := newLeaseClient(t, bin, env)
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
	bin := testBinary(t)
	onBothStores(t, func(t *testing.T, dsn string) {
		model, db, env, cwd := procSetupOn(t, dsn)
		text := persistencetest.Prose(4, 12000)
		model.SetFallback(fakemodel.Reply{Text: text, Chunks: 40, DelayMS: 25})
		c := newLeaseClient(t, bin, env)
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
