package terminal

import (
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

// send renders updates as the client connection would.
func send(t *testing.T, ui *UI, us ...acp.SessionUpdate) {
	t.Helper()
	for _, u := range us {
		if err := ui.SessionUpdate(t.Context(), &acp.SessionNotification{Update: u}); err != nil {
			t.Fatal(err)
		}
	}
}

func running(id, text string) acp.SessionUpdate {
	return acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: id, Status: acp.ToolStatusInProgress,
		Content: []acp.ToolCallContent{acp.ToolText(text)}}}
}

// TestLiveOutputAppends: without a terminal (exec in a pipe), a running
// command's output is written as it comes, each line once, whether the
// updates grow the output or slide a window over it; the final output
// then adds only what was not shown; the model-made text is made safe.
func TestLiveOutputAppends(t *testing.T) {
	var out syncbuf.Buffer
	ui := New(strings.NewReader(""), &out, &out, Options{ShowOutput: true})
	send(t, ui,
		acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "c1", Title: "make test", Kind: acp.ToolKindExecute, Status: acp.ToolStatusInProgress}},
		running("c1", "one\ntw"),               // an unfinished line waits
		running("c1", "one\ntwo\nthree\n"),     // grows
		running("c1", "three\nfour \x1b[2J\n"), // slides
		running("c1", "three\nfour \x1b[2J\n"), // repeats: nothing new
		acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c1", Status: acp.ToolStatusCompleted,
			Content: []acp.ToolCallContent{acp.ToolText("```\ntwo\nthree\nfour \x1b[2J\nfive\n```\nexit code 0")}}},
	)
	ui.Finish()
	want := "⚙ make test [execute]\n" +
		"  │ one\n  │ two\n  │ three\n  │ four ^[[2J\n" +
		"✓ make test\n" +
		"  │ five\n  │ exit code 0\n"
	if got := out.String(); got != want {
		t.Errorf("shown:\n%q\nwant:\n%q", got, want)
	}
}

// TestLiveOutputRedraws: on a terminal the last lines are drawn under the
// command's line and redrawn in place at each update, cut to the width;
// the chat clears them when the command ends (its final output follows).
// Another tool's update is not taken for output.
func TestLiveOutputRedraws(t *testing.T) {
	var out syncbuf.Buffer
	ui := New(strings.NewReader(""), &out, &out, Options{ShowOutput: true, Terminal: true, NoColor: true, NoProgress: false,
		Width: func() int { return 20 }})
	var lines []string
	for i := range 8 {
		lines = append(lines, "line "+string(rune('0'+i)))
	}
	send(t, ui,
		acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "c1", Title: "make", Kind: acp.ToolKindExecute, Status: acp.ToolStatusInProgress}},
		running("c1", strings.Join(lines[:2], "\n")+"\n"),
		running("c1", strings.Join(lines, "\n")+"\n"+strings.Repeat("x", 50)),
	)
	got := out.String()
	for _, want := range []string{
		"  ┆ line 0\n  ┆ line 1\n",
		"\x1b[2A\r\x1b[J  ┆ line 4\n  ┆ line 5\n  ┆ line 6\n  ┆ line 7\n  ┆ xxxxxxxxxxxxxx…\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%q", want, got)
		}
	}
	send(t, ui, acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c1", Status: acp.ToolStatusCompleted,
		Content: []acp.ToolCallContent{acp.ToolText("done")}}})
	ui.Finish()
	if rest := out.String()[len(got):]; !strings.Contains(rest, "\x1b[5A\r\x1b[J") || !strings.Contains(rest, "✓ make\n  │ done\n") {
		t.Errorf("the live lines are not cleared for the final output:\n%q", rest)
	}

	var other syncbuf.Buffer
	ui = New(strings.NewReader(""), &other, &other, Options{})
	send(t, ui,
		acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "r1", Title: "Read a", Kind: acp.ToolKindRead, Status: acp.ToolStatusInProgress}},
		running("r1", "file text\n"))
	if strings.Contains(other.String(), "file text") {
		t.Errorf("a read's update was shown as output: %q", other.String())
	}
}

func TestNewLines(t *testing.T) {
	for _, tc := range []struct{ prev, cur, want string }{
		{"", "a b", "a b"},
		{"a b", "a b c", "c"},
		{"a b c", "b c d", "d"},
		{"a b", "x y", "x y"},
		{"a b", "a b", ""},
		{"x ok ok", "x ok ok ok", "ok"},
		{"c d", "[...cut...] c d e", "e"},
		{"d e", "a b c d e f", "f"}, // the whole output at the end
	} {
		got := strings.Join(newLines(strings.Fields(tc.prev), strings.Fields(tc.cur)), " ")
		if got != tc.want {
			t.Errorf("newLines(%q, %q) = %q, want %q", tc.prev, tc.cur, got, tc.want)
		}
	}
}

// TestLiveOutputEndsInExec: exec shows no final output, so the live view
// shows the output's end when the command ends: the lines not shown yet
// in a pipe, the last lines redrawn on a terminal.
func TestLiveOutputEndsInExec(t *testing.T) {
	final := acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c1", Status: acp.ToolStatusCompleted,
		Content: []acp.ToolCallContent{acp.ToolText("```\ntick 1\ntick 2\ntick 3\n```\nexit code 0")}}}
	start := acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "c1", Title: "ticks", Kind: acp.ToolKindExecute, Status: acp.ToolStatusInProgress}}

	var pipe syncbuf.Buffer
	ui := New(strings.NewReader(""), &pipe, &pipe, Options{})
	send(t, ui, start, running("c1", "```\ntick 1\ntick 2\n```"), final)
	ui.Finish()
	want := "⚙ ticks [execute]\n  │ tick 1\n  │ tick 2\n  │ tick 3\n  │ exit code 0\n✓ ticks\n"
	if got := pipe.String(); got != want {
		t.Errorf("pipe:\n%q\nwant:\n%q", got, want)
	}

	var tty syncbuf.Buffer
	ui = New(strings.NewReader(""), &tty, &tty, Options{Terminal: true, NoColor: true})
	send(t, ui, start, running("c1", "tick 1\ntick 2\n"), final)
	ui.Finish()
	if got := tty.String(); !strings.Contains(got, "\x1b[2A\r\x1b[J  ┆ tick 1\n  ┆ tick 2\n  ┆ tick 3\n  ┆ exit code 0\n") || !strings.HasSuffix(got, "✓ ticks\n") {
		t.Errorf("terminal:\n%q", got)
	}
}
