package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/journal"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// oldReleaseDump is a database the release before the event-log work of
// issue 19 (b6c5c22) wrote, as `sqlite3 .dump` prints it: its rows have
// the old shapes (whole-value message_updated records, messages_changed
// with every touched row whole, plain-DEFLATE frame runs, a session/load
// as separate request, response and session_loaded rows, prompts' parts
// as full JSON) and a reply cut by a kill (a streaming row). It holds one
// session: ten turns, one with a failed tool call and reasoning, /compact,
// an expand and a collapse, a reload, a prompt of three blocks. It was
// made by driving crow-acp built at b6c5c22 over pipes against fakemodel,
// as these tests drive the current binary, then `sqlite3 crow.db .dump`.
const oldReleaseDump = "testdata/oldrelease/b6c5c22.sql"

// TestOldReleaseDatabase: a database written by the previous release
// verifies, reads its frames back, loads (repairing its cut reply), takes
// new turns, a /compact and a reload in the new shapes on top of the old
// ones, verifies again, exports, and migrates to PostgreSQL, where it
// verifies and reads its frames back too.
func TestOldReleaseDatabase(t *testing.T) {
	bin := testBinary(t)
	model, db, env, cwd := procSetup(t)
	dump, err := os.ReadFile(oldReleaseDump)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(string(dump)); err != nil {
		t.Fatalf("restoring %s: %v", oldReleaseDump, err)
	}
	var sid string
	if err := raw.QueryRow(`SELECT id FROM sessions`).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	ctx := context.Background()
	home := t.TempDir()
	cli := func(db string, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		getenv := func(k string) string { return map[string]string{"CROW_DB": db, "HOME": home}[k] }
		if code := run(ctx, args, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr}, getenv); code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	// framesRead checks that every frame of the session's log reads back
	// as a JSON-RPC frame (a run that did not unpack would come back as
	// its packed bytes) and returns how many there are.
	framesRead := func(dsn string) int {
		t.Helper()
		fs, err := journal.Frames(storedEvents(t, dsn, sid))
		if err != nil {
			t.Fatalf("frames of the old session: %v", err)
		}
		for _, f := range fs {
			if !json.Valid(f.Body) || !bytes.Contains(f.Body, []byte(`"jsonrpc"`)) {
				t.Fatalf("event %d: a frame reads back as %.60q", f.Seq, f.Body)
			}
		}
		return len(fs)
	}

	cli(db, "sessions", "verify", sid)
	oldFrames := framesRead(db)
	before := storedMessages(t, db, sid)
	if n := len(before); n < 20 || before[n-1].Status != persistence.StatusStreaming {
		t.Fatalf("the dump holds %d messages, the last %q: want a long session ending in a cut reply", n, before[n-1].Status)
	}

	// The new release loads it, repairs the cut reply, and goes on.
	model.SetFallback(fakemodel.Reply{Text: "a new answer, streamed in chunks, é 中文", Chunks: 8})
	for round := range 2 {
		c := newLeaseClient(t, bin, env)
		c.id++
		c.p.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(c.id) + `,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
		replay := c.p.until(strconv.Itoa(c.id), 10*time.Second)
		if last := replay[len(replay)-1]; !bytes.Contains(last, []byte(`"result"`)) {
			t.Fatalf("load %d: %s", round, last)
		}
		all := string(bytes.Join(replay, nil))
		for _, want := range []string{"look at", "An answer that streams", "resource_link"} {
			if !strings.Contains(all, want) {
				t.Errorf("load %d: the replay lacks %q", round, want)
			}
		}
		c.prompt(sid, "a new question")
		if round == 0 {
			if res := c.prompt(sid, "/compact"); !strings.Contains(res, "end_turn") {
				t.Fatalf("/compact: %s", res)
			}
			list := c.call("_crow/compaction/list", `{"sessionId":"`+sid+`"}`)
			if !strings.Contains(list, `"compactionId":2`) || !strings.Contains(list, `"compactionId":1`) {
				t.Fatalf("no second compaction: %s", list)
			}
			// Undo in the new shapes (patches) on the old rows.
			for _, op := range []string{"expand 2", "expand 1", "collapse 1", "collapse 2", "delete 2"} {
				m, id, _ := strings.Cut(op, " ")
				if res := c.call("_crow/compaction/"+m, `{"sessionId":"`+sid+`","compactionId":`+id+`}`); !strings.Contains(res, `"result"`) {
					t.Fatalf("%s: %s", op, res)
				}
			}
		}
		c.p.close()
		cli(db, "sessions", "verify", sid)
	}
	after := storedMessages(t, db, sid)
	if st := after[len(before)-1].Status; st != persistence.StatusInterrupted {
		t.Errorf("the cut reply is %q after a load, want interrupted", st)
	}
	if n := framesRead(db); n <= oldFrames {
		t.Errorf("%d frames after two loads and turns, %d before", n, oldFrames)
	}
	for _, format := range []string{"markdown", "json"} {
		if out := cli(db, "sessions", "export", sid, "--format", format); !strings.Contains(out, "look at") {
			t.Errorf("export --format %s lacks the old prompt:\n%.300s", format, out)
		}
	}

	if os.Getenv(pgtest.EnvVar) == "" {
		return
	}
	pg := pgtest.URL(t)
	cli(db, "migrate", "--from", db, "--to", pg)
	cli(pg, "sessions", "verify", sid)
	framesRead(pg)
	// And back, into a fresh SQLite file.
	back := filepath.Join(t.TempDir(), "back.db")
	cli(back, "migrate", "--from", pg, "--to", back)
	cli(back, "sessions", "verify", sid)
	framesRead(back)
}
