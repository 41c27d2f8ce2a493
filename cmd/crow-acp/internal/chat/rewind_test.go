package chat

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// rewindConn answers _crow/prompts with the prompts left: a /rewind N
// prompt takes back prompt N and the later ones.
type rewindConn struct {
	fakeConn
	left []promptInfo
}

func (r *rewindConn) Prompt(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
	if t := p.Prompt[0].Text.Text; t == "/rewind 2" {
		r.left = r.left[:1]
	}
	return r.fakeConn.Prompt(ctx, p)
}

func (r *rewindConn) Call(_ context.Context, method string, _, result any) error {
	b, _ := json.Marshal(map[string]any{"prompts": r.left})
	return json.Unmarshal(b, result)
}

// prefillLines records what the chat puts in the input line.
type prefillLines struct {
	lineReader
	got []string
}

func (p *prefillLines) Prefill(text string) { p.got = append(p.got, text) }

// TestRewindPrefills: /rewind N sends the agent's command and then puts
// prompt N's text in the input line, to edit and send again; a /rewind the
// agent refused (no prompt N) or a plain /rewind fills nothing.
func TestRewindPrefills(t *testing.T) {
	c, _ := newTestChat(t, "", t.TempDir())
	lines := &prefillLines{lineReader: c.lines}
	c.lines = lines
	c.commands = []acp.AvailableCommand{{Name: "rewind"}}
	conn := &rewindConn{left: []promptInfo{{1, "first"}, {2, "second\nline two"}, {3, "third"}}}
	for _, typed := range []string{"/rewind", "/rewind 7", "/rewind 2"} {
		if quit := c.handle(conn, typed); quit {
			t.Fatalf("%s quit", typed)
		}
	}
	if len(conn.prompts) != 3 || conn.prompts[2][0].Text.Text != "/rewind 2" {
		t.Errorf("sent %v, want the three commands", conn.prompts)
	}
	if len(lines.got) != 1 || lines.got[0] != "second\nline two" {
		t.Errorf("prefilled %q, want prompt 2's text once", lines.got)
	}
}
