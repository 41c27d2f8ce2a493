package terminal

import (
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Bounds of a finished command's output as the chat shows it: its last
// lines (where errors and summaries are), each cut to a terminal line.
const (
	maxOutputLines    = 20
	maxOutputLineRune = 240
)

// writeOutputLocked shows the output a command's tool call ended with
// (the agent sends it fenced, with the exit status after the fence).
func (ui *UI) writeOutputLocked(content []acp.ToolCallContent, shown []string) {
	var lines []string
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			lines = append(lines, splitLines(c.Content.Content.Text.Text)...)
		}
	}
	lines = newLines(shown, unfence(lines)) // the live view showed the rest
	if len(lines) == 0 {
		return
	}
	if n := len(lines) - maxOutputLines; n > 0 {
		fmt.Fprintf(ui.errw, "  %s\n", ui.dim(fmt.Sprintf("… %s before these not shown", transcript.Plural(n, "line"))))
		lines = lines[n:]
	}
	for _, l := range lines {
		if r := []rune(l); len(r) > maxOutputLineRune {
			l = string(r[:maxOutputLineRune-1]) + "…"
		}
		fmt.Fprintf(ui.errw, "  %s %s\n", ui.dim("│"), termsafe.Text(l))
	}
}

// unfence drops the code fence around a command's output: its first line
// and the closing line of backticks.
func unfence(lines []string) []string {
	isFence := func(l string) bool { return len(l) >= 3 && strings.Trim(l, "`") == "" }
	if len(lines) == 0 || !isFence(lines[0]) {
		return lines
	}
	out := lines[1:]
	for i := len(out) - 1; i >= 0; i-- {
		if isFence(out[i]) {
			return append(out[:i:i], out[i+1:]...)
		}
	}
	return out
}

// StopText says how a turn ended, for exec's status line and chat's note.
func StopText(r acp.StopReason) string {
	switch r {
	case acp.StopEndTurn:
		return "done"
	case acp.StopCancelled:
		return "cancelled"
	case acp.StopMaxTokens:
		return "stopped: the model reached its output limit"
	case acp.StopMaxTurnRequests:
		return "stopped: too many model requests in one turn (max_model_calls)"
	case acp.StopRefusal:
		return "stopped: the model refused"
	default:
		return "stopped: " + termsafe.Line(string(r))
	}
}
