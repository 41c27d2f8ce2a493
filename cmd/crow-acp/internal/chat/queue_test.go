package chat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

// fakeConn records the prompts the chat sends and ends each turn at once.
type fakeConn struct {
	prompts [][]acp.ContentBlock
}

func (f *fakeConn) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s1"}, nil
}
func (f *fakeConn) LoadSession(context.Context, *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	return &acp.LoadSessionResponse{}, nil
}
func (f *fakeConn) Prompt(_ context.Context, r *acp.PromptRequest) (*acp.PromptResponse, error) {
	f.prompts = append(f.prompts, r.Prompt)
	return &acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
}
func (f *fakeConn) Cancel(context.Context, *acp.CancelNotification) error { return nil }
func (f *fakeConn) Call(context.Context, string, any, any) error          { return nil }

func newTestChat(t *testing.T, input, cwd string) (*Chat, *syncbuf.Buffer) {
	t.Helper()
	var out syncbuf.Buffer
	c, err := New(Options{In: strings.NewReader(input), Out: &out, Cwd: cwd, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &out
}

// TestQueue: a line typed while the chat is busy is queued and said so;
// /unqueue drops the queue; Ctrl-C on an empty line stops what runs, on a
// typed one only clears it; the queue is bounded.
func TestQueue(t *testing.T) {
	c, out := newTestChat(t, "", t.TempDir())
	if c.onTyped(inputLine{text: "  next step "}) {
		t.Error("a prompt interrupts")
	}
	if len(c.queue) != 1 || c.queue[0] != "next step" || !strings.Contains(out.String(), "queued (1): next step") {
		t.Errorf("queue %q, shown %q", c.queue, out.String())
	}
	if !c.onTyped(inputLine{err: errInterrupt}) || c.onTyped(inputLine{text: "half typed", err: errInterrupt}) {
		t.Error("Ctrl-C: an empty line interrupts, a typed one does not")
	}
	c.onTyped(inputLine{text: "/unqueue"})
	if len(c.queue) != 0 || !strings.Contains(out.String(), "dropped 1 queued prompt") {
		t.Errorf("queue %q after /unqueue, shown %q", c.queue, out.String())
	}
	for range maxQueued + 1 {
		c.onTyped(inputLine{text: "p"})
	}
	if len(c.queue) != maxQueued || !strings.Contains(out.String(), "are queued already") {
		t.Errorf("%d queued", len(c.queue))
	}
}

// TestInit: /init asks the model for AGENTS.md; an existing one is
// rewritten only when the person says yes.
func TestInit(t *testing.T) {
	dir := t.TempDir()
	conn := &fakeConn{}
	c, _ := newTestChat(t, "", dir)
	if quit, err := c.initProject(conn); quit || err != nil || len(conn.prompts) != 1 {
		t.Fatalf("quit %v err %v, %d prompts", quit, err, len(conn.prompts))
	}
	if p := conn.prompts[0][0].Text.Text; !strings.Contains(p, "AGENTS.md") || !strings.Contains(p, "do not overwrite") {
		t.Errorf("prompt %q", p)
	}

	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	conn = &fakeConn{}
	c, out := newTestChat(t, "n\n", dir)
	c.initProject(conn)
	if len(conn.prompts) != 0 || !strings.Contains(out.String(), "left as it is") {
		t.Errorf("an existing AGENTS.md was not kept: %d prompts, %q", len(conn.prompts), out.String())
	}
	c, _ = newTestChat(t, "yes\n", dir)
	c.initProject(conn)
	if len(conn.prompts) != 1 || !strings.Contains(conn.prompts[0][0].Text.Text, "rewrite it") {
		t.Errorf("confirmed rewrite not asked for: %+v", conn.prompts)
	}
}

// TestPromptBlocks: a prompt carries the !commands' output first (then
// forgets it), its text, then the files it names; a refused file sends
// nothing.
func TestPromptBlocks(t *testing.T) {
	dir := project(t, map[string][]byte{"a.txt": []byte("alpha\n"), "bin": {0, 1}})
	c, _ := newTestChat(t, "", dir)
	c.keep(shellRun{command: "make", output: "ok\n", status: "exit status 0"})
	blocks, err := c.promptBlocks("see @a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 || !strings.Contains(blocks[0].Text.Text, "make") || blocks[1].Text.Text != "see @a.txt" || blocks[2].Resource == nil {
		t.Fatalf("blocks %+v", blocks)
	}
	if blocks, _ := c.promptBlocks("again"); len(blocks) != 1 {
		t.Errorf("the output was offered twice: %+v", blocks)
	}
	c.keep(shellRun{command: "ls"})
	if _, err := c.promptBlocks("see @bin"); err == nil || len(c.pending) != 1 {
		t.Errorf("err %v, pending %d: a refused prompt loses the output", err, len(c.pending))
	}
	for range maxShellRuns + 2 {
		c.keep(shellRun{command: "x"})
	}
	if len(c.pending) != maxShellRuns {
		t.Errorf("%d runs kept", len(c.pending))
	}
}
