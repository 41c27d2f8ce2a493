package terminal

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// TestTerminalRender: the answer alone goes to stdout; tool calls as they
// start and end, plans and compaction go to stderr, in order.
func TestTerminalRender(t *testing.T) {
	var out, errb bytes.Buffer
	ui := New(strings.NewReader(""), &out, &errb, Options{})
	text := func(s string) acp.SessionUpdate {
		return acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(s), MessageID: "msg_2"}}
	}
	compaction := func(status, summary string) acp.SessionUpdate {
		u := map[string]any{"sessionUpdate": "compaction_update", "compactionId": "c1", "status": status}
		if summary != "" {
			u["summary"] = []map[string]string{{"type": "text", "text": summary}}
		}
		raw, _ := json.Marshal(u)
		return acp.SessionUpdate{Other: raw}
	}
	for _, u := range []acp.SessionUpdate{
		text("Let me "), text("look.\n"),
		{AgentThoughtChunk: &acp.ContentChunk{Content: acp.TextBlock("hidden without --thoughts")}},
		{ToolCall: &acp.ToolCall{ToolCallID: "c1", Title: "Read README.md", Kind: acp.ToolKindRead, Status: acp.ToolStatusPending}},
		{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c1", Status: acp.ToolStatusInProgress}},
		{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c1", Status: acp.ToolStatusCompleted}},
		{ToolCall: &acp.ToolCall{ToolCallID: "c2", Title: "Run make test", Kind: acp.ToolKindExecute, Status: acp.ToolStatusPending}},
		{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c2", Status: acp.ToolStatusFailed,
			Content: []acp.ToolCallContent{acp.ToolText("The user refused permission.\nmore")}}},
		{Plan: &acp.Plan{Entries: []acp.PlanEntry{{Content: "read", Status: "completed"}, {Content: "fix", Status: "in_progress"}, {Content: "test", Status: "pending"}}}},
		compaction("in_progress", ""),
		compaction("completed", "Context compacted (summarize): 4 messages, 618 → 351 tokens."),
		// The agent's own note names no message: it is not the answer.
		{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock("[The model endpoint refused the request. Compacting the conversation and trying again once.]\n\n")}},
		text("Done."),
	} {
		ui.render(u)
	}
	ui.Finish()
	if got, want := out.String(), "Let me look.\nDone.\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	want := `⚙ Read README.md [read]
✓ Read README.md
⚙ Run make test [execute]
✗ Run make test: The user refused permission. more
plan:
  ✓ read
  ▸ fix
  · test
✓ Context compacted (summarize): 4 messages, 618 → 351 tokens. (the full history stays stored)
[The model endpoint refused the request. Compacting the conversation and trying again once.]
`
	if got := errb.String(); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}

	// While replaying a loaded session nothing is shown.
	out.Reset()
	errb.Reset()
	ui.SetReplaying(true)
	ui.render(text("old answer"))
	ui.SetReplaying(false)
	if out.Len()+errb.Len() != 0 {
		t.Errorf("replay was shown: %q %q", out.String(), errb.String())
	}
}

// TestPermission: --yes allows once; without a terminal the request is
// refused; at a terminal the person's choice is sent.
func TestPermission(t *testing.T) {
	req := &acp.RequestPermissionRequest{
		SessionID: "s",
		ToolCall:  acp.ToolCallUpdate{ToolCallID: "c1", Title: "Write main.go"},
		Options: []acp.PermissionOption{
			{OptionID: "a1", Name: "Allow once", Kind: acp.PermissionAllowOnce},
			{OptionID: "a2", Name: "Allow always", Kind: acp.PermissionAllowAlways},
			{OptionID: "r1", Name: "Reject", Kind: acp.PermissionRejectOnce},
		},
	}
	cases := []struct {
		name     string
		yes, tty bool
		input    string
		want     string // option id; "" = cancelled
		stderr   string
	}{
		{"yes", true, false, "", "a1", "allowed (--yes): Write main.go"},
		{"no terminal", false, false, "1\n", "r1", "rerun with --yes"},
		{"terminal picks 2", false, true, "2\n", "a2", "choose 1-3"},
		{"terminal retries bad input", false, true, "9\nx\n3\n", "r1", "✗ Reject: Write main.go"},
		{"terminal EOF refuses", false, true, "", "r1", "no answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var errb bytes.Buffer
			ui := New(strings.NewReader(c.input), io.Discard, &errb, Options{Yes: c.yes})
			ui.inTTY = c.tty
			res := ui.askPermission(req)
			got := res.Outcome.OptionID
			if res.Outcome.Outcome != "selected" {
				got = ""
			}
			if got != c.want {
				t.Errorf("chose %q (%s), want %q", got, res.Outcome.Outcome, c.want)
			}
			if !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stderr %q lacks %q", errb.String(), c.stderr)
			}
		})
	}
}
