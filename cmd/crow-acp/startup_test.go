package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
)

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
	bin := testBinary(t)
	_, db, env, cwd := procSetup(t)
	release := lockDatabase(t, db)
	p := startProc(t, bin, env)
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

	evs := storedEvents(t, db, sid)
	if len(evs) == 0 {
		t.Fatal("the session has no events")
	}
	conn := storedEvents(t, db, evs[0].ConnectionID)
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
	bin := testBinary(t)
	_, db, env, cwd := procSetup(t)
	if err := os.WriteFile(db, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, bin, env)
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

// TestExitWhileStoreBlocks: a client that leaves while the database still
// does not answer does not keep the process: it waits storeGrace for the
// open (to write the connection's record), then exits with status 1,
// saying why.
func TestExitWhileStoreBlocks(t *testing.T) {
	bin := testBinary(t)
	_, db, env, _ := procSetup(t)
	lockDatabase(t, db) // held past SQLite's 10 s busy timeout
	p := startProc(t, bin, env)
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
