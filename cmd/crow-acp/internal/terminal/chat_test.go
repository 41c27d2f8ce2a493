package terminal

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// recAnswer records what the answer renderer is given.
type recAnswer struct{ log []string }

func (r *recAnswer) Write(s string) { r.log = append(r.log, "w:"+s) }
func (r *recAnswer) Flush()         { r.log = append(r.log, "flush") }
func (r *recAnswer) End()           { r.log = append(r.log, "end") }

// TestChatOptions: what the chat adds to the client. The answer goes to
// its renderer, flushed before anything else is shown; a resumed
// history's user messages are shown; hidden reasoning is one folded line;
// a finished command's output is shown, its last lines only, made safe;
// every update is observed first.
func TestChatOptions(t *testing.T) {
	var out bytes.Buffer
	ans := &recAnswer{}
	var observed int
	ui := New(strings.NewReader(""), &out, &out, Options{Answer: ans, ShowUser: true, FoldThoughts: true, ShowOutput: true,
		Observe: func(acp.SessionUpdate) { observed++ }})
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	lines[29] = "last \x1b]0;pwned\x07 line"
	output := "```\n" + strings.Join(lines, "\n") + "\n```\nexit code 1"
	for _, u := range []acp.SessionUpdate{
		{UserMessageChunk: &acp.ContentChunk{Content: acp.TextBlock("run the tests\nplease")}},
		{AgentThoughtChunk: &acp.ContentChunk{Content: acp.TextBlock("let me think about this")}},
		{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock("# Plan"), MessageID: "m1"}},
		{ToolCall: &acp.ToolCall{ToolCallID: "c1", Title: "make test", Kind: acp.ToolKindExecute, Status: acp.ToolStatusPending}},
		{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c1", Status: acp.ToolStatusFailed, Content: []acp.ToolCallContent{acp.ToolText(output)}}},
		{ToolCall: &acp.ToolCall{ToolCallID: "c2", Title: "Read a.txt", Kind: acp.ToolKindRead, Status: acp.ToolStatusPending}},
		{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c2", Status: acp.ToolStatusCompleted, Content: []acp.ToolCallContent{acp.ToolText("file text")}}},
	} {
		if err := ui.SessionUpdate(t.Context(), &acp.SessionNotification{Update: u}); err != nil {
			t.Fatal(err)
		}
	}
	ui.Finish()
	if observed != 7 {
		t.Errorf("observed %d updates, want 7", observed)
	}
	if got := strings.Join(ans.log, " "); got != "flush w:# Plan flush flush flush flush end" {
		t.Errorf("answer renderer got %q", got)
	}
	got := out.String()
	for _, want := range []string{
		"› run the tests\n  please\n",
		"✻ thought (5 words; --thoughts shows the reasoning)\n",
		"✗ make test\n",
		"… 11 lines before these not shown\n",
		"  │ line 11\n",
		"  │ last ^[]0;pwned^G line\n  │ exit code 1\n",
		"✓ Read a.txt\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"line 10\n", "file text", "```", "\x1b]"} {
		if strings.Contains(got, not) {
			t.Errorf("output has %q:\n%s", not, got)
		}
	}
}

// TestPermissionReadLine: the chat reads the answer with its line editor.
func TestPermissionReadLine(t *testing.T) {
	var prompts []string
	answers := []string{"x", "2"}
	ui := New(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, Options{ReadLine: func(p string) (string, error) {
		prompts = append(prompts, p)
		a := answers[0]
		answers = answers[1:]
		return a, nil
	}})
	ui.inTTY = true
	res := ui.askPermission(&acp.RequestPermissionRequest{ToolCall: acp.ToolCallUpdate{ToolCallID: "c", Title: "t"},
		Options: []acp.PermissionOption{{OptionID: "a", Name: "Allow", Kind: acp.PermissionAllowOnce}, {OptionID: "r", Name: "Reject", Kind: acp.PermissionRejectOnce}}})
	if res.Outcome.OptionID != "r" || len(prompts) != 2 || prompts[0] != "choose 1-2: " {
		t.Errorf("chose %q after prompts %q", res.Outcome.OptionID, prompts)
	}
}
