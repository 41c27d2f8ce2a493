package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/agent"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
	"github.com/crow-acp/crow-acp/persistence/persistencetest"
)

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
