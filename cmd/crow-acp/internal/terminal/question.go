package terminal

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Bounds of what a permission question shows. A command line is shown
// whole up to maxCommandLines (the person approves all of it); a diff or
// an attached text up to maxShownLines, then how much more there is.
const (
	maxCommandLines = 1000
	maxShownLines   = 80
	diffContext     = 3
)

// writeQuestionLocked shows what a permission request is about: its title,
// a command's whole command line, and what the agent attached (the simple
// commands it parsed from the line, an edit's diff, why it asks every
// time). Everything the model wrote is made visible with termsafe, so a
// command line cannot redraw the question.
func (ui *UI) writeQuestionLocked(p *acp.RequestPermissionRequest, title string) {
	fmt.Fprintf(ui.errw, "? %s%s\n", title, kindSuffix(p.ToolCall.Kind))
	tc := p.ToolCall
	line := commandLine(tc)
	switch {
	case line != "" && termsafe.Line(line) != title:
		lines := strings.Split(termsafe.Text(line), "\n")
		fmt.Fprintf(ui.errw, "  the whole command line (%s):\n", transcript.Plural(len(lines), "line"))
		ui.writeBlockLocked(lines, maxCommandLines, "", "the command is too long to review here: reject it unless you trust all of it")
	case line == "" && len(tc.RawInput) > 0 && (tc.Kind == acp.ToolKindExecute || tc.Kind == acp.ToolKindOther || tc.Kind == ""):
		// A command whose line is not where run_command keeps it, or an
		// MCP tool: what it is called with.
		var v any
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if json.Unmarshal(tc.RawInput, &v) == nil && enc.Encode(v) == nil {
			fmt.Fprintln(ui.errw, "  called with:")
			text := strings.TrimSuffix(termsafe.Text(b.String()), "\n")
			ui.writeBlockLocked(strings.Split(text, "\n"), maxShownLines, "", "")
		}
	}
	for _, c := range p.ToolCall.Content {
		switch {
		case c.Diff != nil:
			ui.writeDiffLocked(c.Diff)
		case c.Content != nil && c.Content.Content.Text != nil:
			text := strings.TrimRight(termsafe.Text(c.Content.Content.Text.Text), "\n")
			ui.writeBlockLocked(strings.Split(text, "\n"), maxShownLines, "", "")
		}
	}
}

// commandLine is the command a command's tool call would run, from its
// raw input, read as the agent's run_command reads it (encoding/json into
// a struct, so a duplicate or differently cased key resolves the same
// way); "" for any other call.
func commandLine(tc acp.ToolCallUpdate) string {
	if tc.Kind != acp.ToolKindExecute || len(tc.RawInput) == 0 {
		return ""
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(tc.RawInput, &in) != nil {
		return ""
	}
	return strings.TrimSpace(in.Command)
}

// writeBlockLocked writes lines indented under the question, at most
// limit of them, then how many more there are (and why that matters).
func (ui *UI) writeBlockLocked(lines []string, limit int, style, more string) {
	for i, l := range lines {
		if i == limit {
			msg := fmt.Sprintf("… %s more not shown", transcript.Plural(len(lines)-limit, "line"))
			if more != "" {
				msg += ": " + more
			}
			fmt.Fprintf(ui.errw, "  %s\n", msg)
			return
		}
		fmt.Fprintf(ui.errw, "  │ %s\n", ui.styled(style, l))
	}
}

// writeDiffLocked shows an edit: a new file's lines, or the changed lines
// of a file with a few lines of context around them.
func (ui *UI) writeDiffLocked(d *acp.Diff) {
	newLines := splitLines(termsafe.Text(d.NewText))
	path := termsafe.Line(d.Path)
	if d.OldText == nil {
		fmt.Fprintf(ui.errw, "  new file %s (%s):\n", path, transcript.Plural(len(newLines), "line"))
		ui.writeDiffLines(diffLines(nil, newLines), path)
		return
	}
	oldLines := splitLines(termsafe.Text(*d.OldText))
	fmt.Fprintf(ui.errw, "  changes to %s:\n", path)
	ui.writeDiffLines(diffLines(oldLines, newLines), path)
}

func (ui *UI) writeDiffLines(lines []string, path string) {
	if len(lines) == 0 {
		fmt.Fprintf(ui.errw, "  │ (no change to %s)\n", path)
		return
	}
	for i, l := range lines {
		if i == maxShownLines {
			fmt.Fprintf(ui.errw, "  … %s more not shown\n", transcript.Plural(len(lines)-maxShownLines, "line"))
			return
		}
		style := ""
		switch l[0] {
		case '+':
			style = green
		case '-':
			style = red
		}
		fmt.Fprintf(ui.errw, "  │ %s\n", ui.styled(style, l))
	}
}

// diffLines is a one-hunk line diff: the lines both versions share at the
// start and at the end are context (at most diffContext of each), the
// rest is removed and added. An edit replaces one place, so its hunk is
// exact; a rewrite with changes far apart shows one hunk spanning them.
// It costs one pass, whatever the model wrote.
func diffLines(before, after []string) []string {
	pre := 0
	for pre < len(before) && pre < len(after) && before[pre] == after[pre] {
		pre++
	}
	suf := 0
	for suf < len(before)-pre && suf < len(after)-pre && before[len(before)-1-suf] == after[len(after)-1-suf] {
		suf++
	}
	if pre == len(before) && pre == len(after) {
		return nil
	}
	var out []string
	for _, l := range before[max(0, pre-diffContext):pre] {
		out = append(out, " "+l)
	}
	for _, l := range before[pre : len(before)-suf] {
		out = append(out, "-"+l)
	}
	for _, l := range after[pre : len(after)-suf] {
		out = append(out, "+"+l)
	}
	for _, l := range before[len(before)-suf : min(len(before), len(before)-suf+diffContext)] {
		out = append(out, " "+l)
	}
	return out
}

const (
	green = "\x1b[32m"
	red   = "\x1b[31m"
	bold  = "\x1b[1m"
)

// styled colours s on a terminal; elsewhere it is s.
func (ui *UI) styled(style, s string) string {
	if style == "" || !ui.errTTY || ui.opt.NoColor {
		return s
	}
	return style + s + "\x1b[0m"
}
