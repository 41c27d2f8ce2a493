package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// The sessions command lines in process; testdata/cli pins their output
// (TestCLI), ./e2e runs them on the binary after a real session.

// TestSessionsDelete checks that delete really removes the session: show
// then answers "not found".
func TestSessionsDelete(t *testing.T) {
	env := fixture.NewEnv(t)
	vars := map[string]string{"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	seedSessions(t, env.DBPath, `{"id":"sess_x","cwd":"/p","messages":[{"role":"user","content":"hi"}]}`)
	cli := commandLines(vars)
	if code, out := both(cli("sessions", "show", "sess_x")); code != exitOK {
		t.Fatalf("show before delete: %d %s", code, out)
	}
	if code, out := both(cli("sessions", "delete", "sess_x")); code != exitOK {
		t.Fatalf("delete: %d %s", code, out)
	}
	if code, out := both(cli("sessions", "show", "sess_x")); code != exitNotFound {
		t.Fatalf("show after delete: %d %s", code, out)
	}
	if code, out := both(cli("sessions", "list")); code != exitOK || strings.Contains(out, "sess_x") {
		t.Fatalf("list after delete: %d %s", code, out)
	}
}

// sessions rename, archive and unarchive change what editors see
// (session/list) as session/set_title and session/archive do; list hides
// archived sessions unless --archived; show prints the total cost.
func TestSessionsRenameArchive(t *testing.T) {
	env := fixture.NewEnv(t)
	vars := map[string]string{"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	seedSessions(t, env.DBPath, `{"id":"sess_x","cwd":"/p","title":"From the prompt","messages":[{"role":"user","content":"hi"}]}
{"id":"sess_y","cwd":"/p","messages":[{"role":"user","content":"other"}]}`)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := store.GetSession(ctx, "sess_x")
	s.Metadata = []byte(`{"cost":{"USD":0.00616}}`)
	if err := store.UpdateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	store.Close()
	cli := commandLines(vars)
	if code, out := both(cli("sessions", "rename", "sess_x", "Login\x1b[2J flake")); code != exitOK || out != "renamed sess_x to Login [2J flake\n" {
		t.Fatalf("rename: %d %q", code, out)
	}
	if code, out := both(cli("sessions", "archive", "sess_x")); code != exitOK || out != "archived sess_x\n" {
		t.Fatalf("archive: %d %q", code, out)
	}
	if code, out := both(cli("sessions", "list")); code != exitOK || strings.Contains(out, "sess_x") || !strings.Contains(out, "sess_y") {
		t.Fatalf("list hides the archived session: %d %s", code, out)
	}
	if code, out := both(cli("sessions", "list", "--archived")); code != exitOK || !strings.Contains(out, "Login [2J flake (archived)") {
		t.Fatalf("list --archived: %d %s", code, out)
	}
	code, out := both(cli("sessions", "show", "sess_x"))
	for _, want := range []string{"title     Login [2J flake\n", "archived  yes", "cost      0.00616 USD"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("show: %d, no %q in\n%s", code, want, out)
		}
	}

	// What an editor sees: the agent lists it only when asked, with the
	// user's title, which a generated one no longer replaces.
	store, err = sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New(nil, store, nil, agent.Config{}, nil)
	res, err := a.ListSessions(ctx, &acp.ListSessionsRequest{Archived: acp.ArchivedOnly})
	if err != nil || len(res.Sessions) != 1 || res.Sessions[0].Title != "Login [2J flake" || !res.Sessions[0].Archived {
		t.Fatalf("session/list only archived: %+v %v", res, err)
	}
	store.Close()

	if code, out := both(cli("sessions", "unarchive", "sess_x")); code != exitOK || out != "unarchived sess_x\n" {
		t.Fatalf("unarchive: %d %q", code, out)
	}
	if code, out := both(cli("sessions", "list")); code != exitOK || !strings.Contains(out, "sess_x") {
		t.Fatalf("list after unarchive: %d %s", code, out)
	}
	if code, _, _ := cli("sessions", "rename", "sess_nope", "x"); code != exitNotFound {
		t.Fatalf("rename of an unknown session: exit %d", code)
	}
	if code, _, _ := cli("sessions", "archive", "sess_nope"); code != exitNotFound {
		t.Fatalf("archive of an unknown session: exit %d", code)
	}
	if code, _, _ := cli("sessions", "rename", "sess_x", " \t"); code != exitUsage {
		t.Fatalf("rename to an empty title: exit %d", code)
	}
}

// prune-frames deletes old raw frames only: new frames and lifecycle events
// stay.
func TestSessionsPruneFrames(t *testing.T) {
	env := fixture.NewEnv(t)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).UTC()
	if err := store.CreateConnection(ctx, &persistence.Connection{ID: "conn_1", PID: 1, Host: "h"}); err != nil {
		t.Fatal(err)
	}
	frame := func(at time.Time) *persistence.Event {
		return &persistence.Event{ConnectionID: "conn_1", Stream: "conn_1", At: at, Direction: persistence.DirIn,
			Kind: persistence.EventNotification, Method: "session/cancel", Body: []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}`)}
	}
	lifecycle := &persistence.Event{ConnectionID: "conn_1", Stream: "conn_1", At: old, Kind: persistence.EventSessionClosed, Body: []byte(`{}`)}
	if err := store.AppendEvents(ctx, frame(old), frame(old), lifecycle, frame(time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	store.Close()

	vars := map[string]string{"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	cli := commandLines(vars)
	if code, out := both(cli("sessions", "prune-frames")); code != exitUsage || !strings.Contains(out, "--older-than is required") {
		t.Fatalf("without --older-than: %d %s", code, out)
	}
	code, out := both(cli("sessions", "prune-frames", "--older-than", "24h"))
	if code != exitOK || !strings.Contains(out, "deleted 2 frames") {
		t.Fatalf("prune: %d %s", code, out)
	}
	store, err = sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	left, err := store.Events(ctx, "conn_1", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0].Kind != persistence.EventSessionClosed || left[1].Kind != persistence.EventNotification {
		t.Fatalf("after prune: %+v", left)
	}
}

// TestSessionsImport: a session exported as JSON and imported into another
// database is the same session (content digest: messages, compacted ones,
// compaction records, session header), its metadata as agent.AsImported
// rebuilds it (the mode a new session starts in); importing it again is
// refused and leaves it as it is; a file that is not a whole export stores
// nothing.
func TestSessionsImport(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	fillStore(t, from, "one", "two")
	var files []string
	for _, id := range []string{"one", "two"} {
		f := filepath.Join(dir, id+".json")
		if code, out, errOut := runCmd(t, "sessions", "export", id, "--format", "json", "--output", f, "--db", from); code != exitOK {
			t.Fatalf("export %s: exit %d\n%s%s", id, code, out, errOut)
		}
		files = append(files, f)
	}
	code, out, errOut := runCmd(t, append([]string{"sessions", "import", "--db", to}, files...)...)
	if code != exitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	if want := "imported one (" + strconv.Itoa(persistencetest.RichSessionMessages) + " messages, directory /w/one) from " + files[0]; !strings.Contains(out, want) {
		t.Errorf("stdout %q does not say %q", out, want)
	}
	for _, id := range []string{"one", "two"} {
		if a, b := exported(t, from, id, true), exported(t, to, id, false); a != b {
			t.Fatalf("%s differs after the import:\n%s\n%s", id, a, b)
		}
	}
	dst := digests(t, to)

	// Again, with a damaged file beside: both reported, nothing changed.
	bad := filepath.Join(dir, "bad.json")
	json, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	damaged := strings.Replace(string(json), `"compactedIds": [`, `"compactedIds": [987654, `, 1)
	if damaged == string(json) {
		t.Fatal("the export has no compaction to damage")
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(damaged, `"id": "two"`, `"id": "three"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCmd(t, "sessions", "import", "--db", to, files[0], bad)
	if code == exitOK || !strings.Contains(errOut, "session one is already in the database") ||
		!strings.Contains(errOut, "bad.json: not a whole session export: compaction 0 names message 987654") {
		t.Fatalf("second import: exit %d\n%s", code, errOut)
	}
	if after := digests(t, to); len(after) != 2 || after["one"] != dst["one"] {
		t.Fatalf("a refused import changed the database: %v", after)
	}
}

// exported is session id of the store dsn names as the JSON export has it
// without ids (a store assigns its own): what an import must keep;
// asImported, with the metadata an import gives it.
func exported(t *testing.T, dsn, id string, asImported bool) string {
	t.Helper()
	s, err := backend.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := persistence.Dump(t.Context(), s, id)
	if err != nil {
		t.Fatal(err)
	}
	if asImported {
		if err := agent.AsImported(&d.Session, agent.ModeDefault); err != nil {
			t.Fatal(err)
		}
	}
	// Ids by position, in both stores alike.
	msgIDs, compIDs := make([]int64, len(d.Messages)), make([]int64, len(d.Compactions))
	for i := range msgIDs {
		msgIDs[i] = int64(i + 1)
	}
	for i := range compIDs {
		compIDs[i] = int64(i + 1)
	}
	d.Renumber(msgIDs, compIDs)
	var b strings.Builder
	if err := transcript.WriteJSON(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSessionsImportSizeCap (issue 37, item 7): an import holds what it
// reads in memory (about 7 to 10 times the file's size), so a file larger
// than transcript.MaxExportBytes is refused with the reason before any of
// it is read, and the next file is still imported.
func TestSessionsImportSizeCap(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	fillStore(t, from, "one")
	good := filepath.Join(dir, "one.json")
	if code, out, errOut := runCmd(t, "sessions", "export", "one", "--format", "json", "--output", good, "--db", from); code != exitOK {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err == nil {
		err = f.Truncate(transcript.MaxExportBytes + 1) // sparse: nothing written
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "sessions", "import", "--db", to, huge, good)
	if code == exitOK || !strings.Contains(errOut, "huge.json: 268435457 bytes, more than the 256 MiB an import reads") || !strings.Contains(out, "imported one") {
		t.Fatalf("import of a file over the cap: exit %d\n%s%s", code, out, errOut)
	}
}
