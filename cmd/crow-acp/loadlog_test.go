package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/journal"
	"github.com/crow-acp/crow-acp/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestReloadsAreRecordedCheaply (issue 19, "a load adds <= 1 KB"): one
// crow-acp process loads a session 20 times, as an editor reopening a
// thread does (each request sent as soon as the previous response is
// read). On SQLite the database grows by at most 1 KB a load (pages in
// use after a checkpoint, as crow-bench measures it); on both stores every
// frame of every load (request, response, the commands and usage updates
// after it) reads back from the log byte for byte as the client got it,
// none of the replays does, and `sessions verify` still passes; migrated
// from SQLite to PostgreSQL, the same frames still read back.
func TestReloadsAreRecordedCheaply(t *testing.T) {
	onBothStores(t, testReloads)
}

func testReloads(t *testing.T, dsn string) {
	bin := testBinary(t)
	model, db, env, cwd := procSetupOn(t, dsn)
	model.SetFallback(fakemodel.Reply{Text: "an answer in a few chunks", Chunks: 5})
	c := newLeaseClient(t, bin, env)
	sid := c.newSession(cwd)
	c.prompt(sid, "first question")
	c.prompt(sid, "second question")
	c.p.close()

	ctx := context.Background()
	evs := storedEvents(t, db, sid)
	from := evs[len(evs)-1].Seq
	var before int64
	if dsn == "" {
		before = sqlitePagesInUse(t, db)
	}

	const loads = 20
	c = newLeaseClient(t, bin, env)
	var want []string // what the log must give back: each load's frames, in order
	var after []string
	for i := range loads {
		c.id++
		id := strconv.Itoa(c.id)
		req := `{"jsonrpc":"2.0","id":` + id + `,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`
		c.p.send(req)
		var resp string
		replayed := 0
		for _, f := range c.p.until(id, 10*time.Second) {
			switch {
			case bytes.Contains(f, []byte(`"available_commands_update"`)) || bytes.Contains(f, []byte(`"usage_update"`)):
				after = append(after, string(f)) // the previous load's
			case bytes.Contains(f, []byte(`"message_chunk"`)) || bytes.Contains(f, []byte(`_message_chunk"`)):
				replayed++
			default:
				resp = string(f)
			}
		}
		if replayed == 0 {
			t.Fatalf("load %d replayed nothing", i+1)
		}
		if i > 0 {
			want = append(want, after...)
		}
		after = nil
		want = append(want, req, resp)
	}
	// The last load's updates come before the answer to one more request.
	c.p.send(`{"jsonrpc":"2.0","id":"last","method":"vendor/unknown","params":{}}`)
	for _, f := range c.p.until(`"last"`, 10*time.Second) {
		if bytes.Contains(f, []byte(`"sessionId"`)) {
			want = append(want, string(f))
		}
	}
	c.p.close()

	evs = storedEvents(t, db, sid)
	all, err := journal.Frames(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range all {
		if f.Seq > from {
			got = append(got, string(f.Body))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("frame %d back from the log:\n%.300s\nsent:\n%.300s", i, got[i], want[i])
			}
		}
		t.Fatalf("%d frames back from the loads, %d sent", len(got), len(want))
	}
	if dsn == "" {
		if grew := sqlitePagesInUse(t, db) - before; grew > loads<<10 {
			t.Errorf("%d loads (and the connection's initialize) grew the database by %d bytes: want at most 1 KB a load", loads, grew)
		} else {
			t.Logf("%d loads grew the database by %d bytes", loads, grew)
		}
	}
	home := t.TempDir()
	cli := func(db string, args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		getenv := func(k string) string { return map[string]string{"CROW_DB": db, "HOME": home}[k] }
		if code := run(ctx, args, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr}, getenv); code != exitOK {
			t.Fatalf("%s after %d loads: exit %d\n%s%s", strings.Join(args, " "), loads, code, stdout.String(), stderr.String())
		}
	}
	cli(db, "sessions", "verify", sid)
	if dsn != "" || os.Getenv(pgtest.EnvVar) == "" {
		return
	}
	// Migrated, the loads' records still read back: they name their
	// bases by checksum, not by seq.
	pg := pgtest.URL(t)
	cli(db, "migrate", "--from", db, "--to", pg)
	cli(pg, "sessions", "verify", sid)
	back, err := journal.Frames(storedEvents(t, pg, sid))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(back); n < len(got) || string(back[n-1].Body) != got[len(got)-1] {
		t.Errorf("migrated: %d frames back, want the %d of the loads at the end", n, len(got))
	}
	var migrated []string
	for _, f := range back[len(back)-len(got):] {
		migrated = append(migrated, string(f.Body))
	}
	if strings.Join(migrated, "\n") != strings.Join(got, "\n") {
		t.Errorf("migrated, the loads' frames read back differently")
	}
}

// sqlitePagesInUse is persistencetest.SQLitePagesInUse or a failed test.
func sqlitePagesInUse(t *testing.T, path string) int64 {
	t.Helper()
	n, err := persistencetest.SQLitePagesInUse(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
