package main

import (
	"database/sql"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// readmeConversationSQL is the query README's "Reading your sessions with
// sqlite3" gives, as it is written there.
func readmeConversationSQL(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "#### Reading your sessions with sqlite3")
	_, block, ok2 := strings.Cut(section, "sqlite3 ~/.local/share/crow-acp/crow.db \\\n")
	q, _, ok3 := strings.Cut(strings.TrimSpace(block), "\n```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no sqlite3 example under \"Reading your sessions with sqlite3\"")
	}
	return strings.Trim(strings.TrimSpace(q), `"`)
}

// TestReadmeSQLShowsTheConversation: on a fresh session made by the binary
// (a prompt, a long streamed reply), README's query shows each message's text
// whole, through database/sql and through the sqlite3 command when there is
// one.
func TestReadmeSQLShowsTheConversation(t *testing.T) {
	q := readmeConversationSQL(t)
	bin := testBinary(t)
	model, db, env, cwd := procSetup(t)
	// Long enough that builds after 0.1.0 kept it out of the row.
	reply := strings.Repeat("a reply streamed in chunks, with \"quotes\", é and 中文, over several lines\n", 10)
	model.SetFallback(fakemodel.Reply{Text: reply, Chunks: 40})
	c := newLeaseClient(t, bin, env)
	sid := c.newSession(cwd)
	c.prompt(sid, "what is in the README?")
	c.p.close()

	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(q)
	if err != nil {
		t.Fatalf("README's query: %v\n%s", err, q)
	}
	var got []string
	for rows.Next() {
		var seq int
		var role, status, content string
		if err := rows.Scan(&seq, &role, &status, &content); err != nil {
			t.Fatal(err)
		}
		got = append(got, role+": "+content)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"user: what is in the README?", "assistant: " + reply}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("README's query shows\n%q\nwant\n%q", got, want)
	}
	if _, err := exec.LookPath("sqlite3"); err != nil {
		return
	}
	out, err := exec.Command("sqlite3", db, q).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "|assistant|complete|"+reply) {
		t.Errorf("sqlite3 %s: %v\n%s", q, err, out)
	}
}
