package terminal

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Live output: a tool_call_update of a running command (status pending or
// in progress, or none) that carries text content is its output so far.
// On a terminal its last liveLines lines are drawn under the command's
// line and redrawn in place at each update; elsewhere (a pipe, TERM=dumb)
// the lines not shown yet are written as they come. When the command ends
// the live lines are cleared if the chat shows the final output, which
// then holds only what the live view did not show.
const (
	liveLines    = 5
	liveKeep     = 200      // lines remembered to tell new ones from shown ones
	liveMaxBytes = 64 << 10 // of an update's text looked at (its end)
	liveContext  = 20       // lines compared to find where the shown ones end
)

// liveUpdate shows u if it is a running command's output, and reports
// whether it was one.
func (ui *UI) liveUpdate(u acp.SessionUpdate) bool {
	tu := u.ToolCallUpdate
	if tu == nil || len(tu.Content) == 0 {
		return false
	}
	switch tu.Status {
	case "", acp.ToolStatusPending, acp.ToolStatusInProgress:
	default:
		return false
	}
	kind := ui.kinds[tu.ToolCallID]
	if tu.Kind != "" {
		kind = tu.Kind
	}
	if kind != acp.ToolKindExecute {
		return false
	}
	var text strings.Builder
	for _, c := range tu.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			text.WriteString(c.Content.Content.Text.Text)
		}
	}
	t := text.String()
	if len(t) > liveMaxBytes {
		t = t[len(t)-liveMaxBytes:]
		if i := strings.IndexByte(t, '\n'); i >= 0 {
			t = t[i+1:] // from a whole line
		}
	}
	lines := unfence(splitLines(t))
	if ui.live.id != tu.ToolCallID {
		ui.live = liveView{id: tu.ToolCallID}
	}
	if ui.errTTY && !ui.opt.NoProgress {
		ui.redrawLiveLocked(lines)
	} else {
		if !strings.HasSuffix(t, "\n") && len(lines) > 0 {
			lines = lines[:len(lines)-1] // an unfinished line comes whole later
		}
		fresh := newLines(ui.live.shown, lines)
		if len(fresh) > 0 {
			ui.stopSpinLocked()
			ui.flushAnswerLocked()
			ui.endThoughtLocked()
			ui.breakLineLocked()
		}
		for _, l := range fresh {
			fmt.Fprintf(ui.errw, "  %s %s\n", ui.dim("│"), cut(termsafe.Text(l), maxOutputLineRune))
		}
		ui.live.shown = keepLast(append(ui.live.shown, fresh...), liveKeep)
	}
	return true
}

// redrawLiveLocked draws the last lines in place of those drawn before,
// below the command's line and above the progress line.
func (ui *UI) redrawLiveLocked(lines []string) {
	if len(lines) > liveLines {
		lines = lines[len(lines)-liveLines:]
	}
	label, start, spinning := "", time.Now(), ui.spin != nil
	if spinning {
		label, start = ui.spin.label, ui.spin.start
	}
	live := ui.live
	ui.stopSpinLocked()
	if live.drawn == 0 {
		ui.flushAnswerLocked()
		ui.endThoughtLocked()
		ui.breakLineLocked()
	} else {
		fmt.Fprintf(ui.errw, "\x1b[%dA\r\x1b[J", live.drawn)
	}
	width := 80
	if ui.opt.Width != nil {
		width = ui.opt.Width()
	} else if w := termWidth(ui.errw); w > 0 {
		width = w
	}
	for _, l := range lines {
		fmt.Fprintf(ui.errw, "  %s %s\n", ui.dim("┆"), cut(termsafe.Line(l), max(10, width-5)))
	}
	ui.live = liveView{id: live.id, drawn: len(lines), shown: keepLast(lines, liveKeep)}
	if spinning {
		ui.startSpinLocked(label)
		if ui.spin != nil {
			ui.spin.start = start
		}
	}
}

// endLiveLocked finishes the live view of a command that ended with
// content. Where the final output will be shown (the chat) the live lines
// are cleared on a terminal, and otherwise the lines shown are returned so
// that the final output skips them. Where it will not (exec) the live
// view shows the output's end: redrawn on a terminal, its lines not shown
// yet written elsewhere.
func (ui *UI) endLiveLocked(id string, content []acp.ToolCallContent) []string {
	if ui.live.id != id {
		return nil
	}
	live := ui.live
	if ui.opt.ShowOutput {
		ui.live = liveView{}
		if live.drawn > 0 {
			ui.stopSpinLocked()
			fmt.Fprintf(ui.errw, "\x1b[%dA\r\x1b[J", live.drawn)
			return nil // cleared: the final output shows its end again
		}
		return live.shown
	}
	var final []string
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			final = append(final, splitLines(c.Content.Content.Text.Text)...)
		}
	}
	final = unfence(final)
	if live.drawn > 0 {
		ui.redrawLiveLocked(final)
	} else {
		for _, l := range newLines(live.shown, final) {
			fmt.Fprintf(ui.errw, "  %s %s\n", ui.dim("│"), cut(termsafe.Text(l), maxOutputLineRune))
		}
	}
	ui.live = liveView{}
	return nil
}

// newLines is what cur adds to prev (the lines shown): what follows, in
// cur, the last place where prev's last line stands with the lines before
// it agreeing (up to liveContext of them, as far as both go). That finds
// new lines whether cur grew, slid as a window over the output, starts
// with a note ("[... earlier bytes not shown ...]"), or is the whole
// output at the end; all of cur when prev's last line is not in it.
func newLines(prev, cur []string) []string {
	if len(prev) == 0 {
		return cur
	}
	last := len(prev) - 1
	for j := len(cur) - 1; j >= 0; j-- {
		ok := true
		for i := 0; i <= liveContext && i <= last && i <= j; i++ {
			if cur[j-i] != prev[last-i] {
				ok = false
				break
			}
		}
		if ok {
			return cur[j+1:]
		}
	}
	return cur
}

func keepLast(lines []string, n int) []string {
	if len(lines) > n {
		return append([]string(nil), lines[len(lines)-n:]...)
	}
	return lines
}

// cut shortens s to n runes.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// termWidth is the width of the terminal w is, or 0.
func termWidth(w any) int {
	if f, ok := w.(*os.File); ok {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil {
			return n
		}
	}
	return 0
}

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
