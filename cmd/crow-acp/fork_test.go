package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// A fork made through the real binary is listed and shown with where it
// came from, and the frame log records it: the request and answer in the
// source's stream (the MCP server's secret masked, as for session/new),
// the fork's stream starting with its creation naming the source.
func TestForkListedAndLogged(t *testing.T) {
	bin := testBinary(t)
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	model.Enqueue(fakemodel.Reply{Text: "Noted.", Chunks: 1})
	db := filepath.Join(t.TempDir(), "crow.db")
	env := map[string]string{"OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": "sk-test", "CROW_DB": db,
		"XDG_CONFIG_HOME": t.TempDir(), "CROW_MODEL": fakemodel.ModelID}
	p := startProc(t, bin, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	p.until("0", 10*time.Second)
	cwd := t.TempDir()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + quote(cwd) + `,"mcpServers":[]}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	frames := p.until("1", 10*time.Second)
	mustJSON(t, frames[len(frames)-1], &created)
	src := created.Result.SessionID
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":` + quote(src) + `,"prompt":[{"type":"text","text":"remember the port 8080"}]}}`)
	p.until("2", 10*time.Second)
	const secret = "fork-mcp-secret-4711"
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/fork","params":{"sessionId":` + quote(src) + `,"cwd":` + quote(cwd) +
		`,"mcpServers":[{"name":"tools","command":"/nonexistent/mcp","args":[],"env":[{"name":"TOKEN","value":"` + secret + `"}]}]}}`)
	frames = p.until("3", 10*time.Second)
	var forked struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	mustJSON(t, frames[len(frames)-1], &forked)
	fork := forked.Result.SessionID
	if fork == "" || fork == src {
		t.Fatalf("session/fork answered %s", frames[len(frames)-1])
	}
	// /fork: the reply names the new session.
	p.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":` + quote(src) + `,"prompt":[{"type":"text","text":"/fork"}]}}`)
	var said strings.Builder
	for _, f := range p.until("4", 10*time.Second) {
		said.Write(f)
	}
	named := regexp.MustCompile(`Forked into session (sess_[0-9a-f]{32})`).FindStringSubmatch(said.String())
	if named == nil || named[1] == fork {
		t.Fatalf("/fork did not name a new session: %s", said.String())
	}
	cmdFork := named[1]
	p.close()

	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = append([]string{"HOME=" + t.TempDir()}, environ(env)...)
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		if err := c.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", args, err, e.String())
		}
		return o.String()
	}
	list := run("sessions", "list")
	var forkLine string
	for line := range strings.SplitSeq(list, "\n") {
		if strings.HasPrefix(line, fork) {
			forkLine = line
		}
	}
	if !strings.Contains(forkLine, "[fork of "+src+"]") {
		t.Errorf("sessions list does not say where the fork came from:\n%s", list)
	}
	show := run("sessions", "show", fork)
	for _, want := range []string{"forked    from " + src, "remember the port 8080", "Noted."} {
		if !strings.Contains(show, want) {
			t.Errorf("sessions show %s lacks %q:\n%s", fork, want, show)
		}
	}

	// The fork's log rebuilds it: its stream holds the copy's snapshot.
	run("sessions", "verify", fork)

	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	srcEvents, err := store.Events(ctx, src, persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var request, answer bool
	budget := persistence.NewBudget(persistence.MaxDecoded)
	for _, e := range srcEvents {
		fs, err := e.Frames(budget)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if bytes.Contains(f, []byte(secret)) {
				t.Errorf("the frame log keeps the MCP server's secret: %s", f)
			}
			request = request || e.Kind == persistence.EventRequest && e.Method == "session/fork"
			answer = answer || e.Kind == persistence.EventResponse && e.Method == "session/fork" && bytes.Contains(f, []byte(fork))
		}
	}
	if !request || !answer {
		t.Errorf("the source's stream lacks the fork's request (%v) or answer (%v)", request, answer)
	}
	for _, id := range []string{fork, cmdFork} {
		forkEvents, err := store.Events(ctx, id, persistence.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var createdFrom bool
		for _, e := range forkEvents {
			createdFrom = createdFrom || e.Kind == persistence.EventSessionCreated && bytes.Contains(e.Body, []byte(`"forkedFrom":"`+src+`"`))
		}
		if !createdFrom {
			t.Errorf("the stream of fork %s does not hold its creation from %s: %d events", id, src, len(forkEvents))
		}
	}
}
