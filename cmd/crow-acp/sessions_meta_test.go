package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/agent"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
)

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
	cli := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(ctx, args, stdio{in: strings.NewReader(""), out: &out, err: &out}, func(k string) string { return vars[k] })
		return code, out.String()
	}
	if code, out := cli("sessions", "rename", "sess_x", "Login\x1b[2J flake"); code != exitOK || out != "renamed sess_x to Login [2J flake\n" {
		t.Fatalf("rename: %d %q", code, out)
	}
	if code, out := cli("sessions", "archive", "sess_x"); code != exitOK || out != "archived sess_x\n" {
		t.Fatalf("archive: %d %q", code, out)
	}
	if code, out := cli("sessions", "list"); code != exitOK || strings.Contains(out, "sess_x") || !strings.Contains(out, "sess_y") {
		t.Fatalf("list hides the archived session: %d %s", code, out)
	}
	if code, out := cli("sessions", "list", "--archived"); code != exitOK || !strings.Contains(out, "Login [2J flake (archived)") {
		t.Fatalf("list --archived: %d %s", code, out)
	}
	code, out := cli("sessions", "show", "sess_x")
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

	if code, out := cli("sessions", "unarchive", "sess_x"); code != exitOK || out != "unarchived sess_x\n" {
		t.Fatalf("unarchive: %d %q", code, out)
	}
	if code, out := cli("sessions", "list"); code != exitOK || !strings.Contains(out, "sess_x") {
		t.Fatalf("list after unarchive: %d %s", code, out)
	}
	if code, _ := cli("sessions", "rename", "sess_nope", "x"); code != exitNotFound {
		t.Fatalf("rename of an unknown session: exit %d", code)
	}
	if code, _ := cli("sessions", "archive", "sess_nope"); code != exitNotFound {
		t.Fatalf("archive of an unknown session: exit %d", code)
	}
	if code, _ := cli("sessions", "rename", "sess_x", " \t"); code != exitUsage {
		t.Fatalf("rename to an empty title: exit %d", code)
	}
}
