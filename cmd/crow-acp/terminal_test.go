package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// TestTerminalRender: the answer alone goes to stdout; tool calls as they
// start and end, plans and compaction go to stderr, in order.
func TestTerminalRender(t *testing.T) {
	var out, errb bytes.Buffer
	ui := newTerminalUI(stdio{in: strings.NewReader(""), out: &out, err: &errb}, execOptions{})
	text := func(s string) acp.SessionUpdate {
		return acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(s)}}
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
		text("Done."),
	} {
		ui.render(u)
	}
	ui.finish()
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
`
	if got := errb.String(); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}

	// While replaying a loaded session nothing is shown.
	out.Reset()
	errb.Reset()
	ui.setReplaying(true)
	ui.render(text("old answer"))
	ui.setReplaying(false)
	if out.Len()+errb.Len() != 0 {
		t.Errorf("replay was shown: %q %q", out.String(), errb.String())
	}
}
