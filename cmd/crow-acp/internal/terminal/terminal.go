// Package terminal is `crow-acp exec`'s ACP client for a person at a
// terminal: it renders a turn's session updates (the answer on stdout, the
// work on stderr) and asks the permission questions.
package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// SessionUpdate renders an update. The client connection calls it on its
// read loop, so updates are rendered in the order the agent sent them.
func (ui *UI) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	if ui.opt.Observe != nil {
		ui.opt.Observe(n.Update)
	}
	ui.render(n.Update)
	return nil
}

// RequestPermission asks the person (or answers for them: --yes, no
// terminal). It runs off the read loop, so asking may take a while; a
// $/cancel_request is not acted on: the question is answered when the
// person answers.
func (ui *UI) RequestPermission(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	res := ui.askPermission(p)
	return &res, nil
}

// SetReplaying hides what arrives while a loaded session's history is
// replayed.
func (ui *UI) SetReplaying(on bool) {
	ui.mu.Lock()
	ui.replaying = on
	ui.mu.Unlock()
}

// render shows one update.
func (ui *UI) render(u acp.SessionUpdate) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	if ui.replaying {
		return
	}
	if ui.liveUpdate(u) {
		return
	}
	switch {
	case u.AgentMessageChunk != nil:
		t := u.AgentMessageChunk.Content.Text
		switch {
		case t == nil || t.Text == "":
		case u.AgentMessageChunk.MessageID == "":
			// Text that belongs to no stored message is the agent's own
			// note (the window was too small, compacting and retrying):
			// not the answer, so not on stdout.
			ui.noteLocked("%s", ui.dim(termsafe.Text(strings.TrimSpace(t.Text))))
		case ui.opt.Answer != nil:
			ui.stopSpinLocked()
			ui.endThoughtLocked()
			ui.opt.Answer.Write(t.Text)
		default:
			ui.stopSpinLocked()
			ui.endThoughtLocked()
			fmt.Fprint(ui.out, termsafe.Text(t.Text))
			ui.midLine = !strings.HasSuffix(t.Text, "\n")
		}
	case u.UserMessageChunk != nil:
		if t := u.UserMessageChunk.Content.Text; t != nil && ui.opt.ShowUser {
			ui.stopSpinLocked()
			ui.flushAnswerLocked()
			ui.endThoughtLocked()
			ui.breakLineLocked()
			text := strings.TrimRight(termsafe.Text(t.Text), "\n")
			fmt.Fprintf(ui.errw, "\n%s\n\n", ui.styled(bold, "› "+strings.ReplaceAll(text, "\n", "\n  ")))
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil && !ui.opt.Thoughts && ui.opt.FoldThoughts {
			ui.folded += len(strings.Fields(t.Text))
		}
		if t := u.AgentThoughtChunk.Content.Text; t != nil && ui.opt.Thoughts {
			ui.stopSpinLocked()
			ui.breakLineLocked()
			if !ui.thinking {
				fmt.Fprint(ui.errw, ui.dim("thinking: "))
				ui.thinking = true
			}
			fmt.Fprint(ui.errw, ui.dim(termsafe.Text(t.Text)))
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		title := termsafe.Line(tc.Title)
		ui.titles[tc.ToolCallID] = title
		ui.kinds[tc.ToolCallID] = tc.Kind
		ui.noteLocked("⚙ %s%s", title, kindSuffix(tc.Kind))
		if tc.Status == acp.ToolStatusInProgress || tc.Status == acp.ToolStatusPending {
			ui.startSpinLocked("running " + title)
		}
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		if tu.Title != "" {
			ui.titles[tu.ToolCallID] = termsafe.Line(tu.Title)
		}
		title := ui.titles[tu.ToolCallID]
		switch tu.Status {
		case acp.ToolStatusInProgress:
			ui.startSpinLocked("running " + title)
		case acp.ToolStatusCompleted:
			shown := ui.endLiveLocked(tu.ToolCallID, tu.Content)
			ui.noteLocked("✓ %s", title)
			if ui.opt.ShowOutput && ui.kinds[tu.ToolCallID] == acp.ToolKindExecute {
				ui.writeOutputLocked(tu.Content, shown)
			}
			ui.startSpinLocked("waiting for the model")
		case acp.ToolStatusFailed:
			shown := ui.endLiveLocked(tu.ToolCallID, tu.Content)
			if ui.opt.ShowOutput && ui.kinds[tu.ToolCallID] == acp.ToolKindExecute {
				ui.noteLocked("✗ %s", title)
				ui.writeOutputLocked(tu.Content, shown) // its end says why
			} else {
				ui.noteLocked("✗ %s%s", title, failureText(tu.Content))
			}
			ui.startSpinLocked("waiting for the model")
		}
	case u.Plan != nil:
		ui.noteLocked("plan:")
		for _, e := range u.Plan.Entries {
			mark := map[string]string{"completed": "✓", "in_progress": "▸"}[e.Status]
			if mark == "" {
				mark = "·"
			}
			ui.noteLocked("  %s %s", mark, termsafe.Line(e.Content))
		}
	case u.Other != nil:
		ui.renderOtherLocked(u.Other)
	}
}

// renderOtherLocked shows the update kinds acp has no type for: the
// (unstable) compaction_update and the SDK 2.4 notice.
func (ui *UI) renderOtherLocked(raw json.RawMessage) {
	var n struct {
		Kind string `json:"sessionUpdate"`
		acp.Notice
	}
	if json.Unmarshal(raw, &n) == nil && n.Kind == "notice" {
		// Information for the person, outside the answer.
		text := oneLine(n.Title, 200)
		if d := strings.TrimSpace(n.Description); d != "" {
			text += ": " + termsafe.Text(d)
		}
		mark := "ℹ"
		if n.Severity == "warning" || n.Severity == "error" {
			mark = "⚠"
		}
		ui.noteLocked("%s %s", mark, text)
		return
	}
	c, ok := acp.ParseCompactionUpdate(raw)
	if !ok {
		return
	}
	switch c.Status {
	case acp.CompactionInProgress:
		ui.startSpinLocked("compacting the conversation")
	case acp.CompactionCompleted:
		text := "compacted the conversation"
		for _, b := range c.Summary {
			if b.Text != nil && strings.TrimSpace(b.Text.Text) != "" {
				text = oneLine(b.Text.Text, 200)
				break
			}
		}
		ui.noteLocked("✓ %s (the full history stays stored)", text)
		ui.startSpinLocked("waiting for the model")
	case acp.CompactionFailed:
		msg := "no reason given"
		if c.Error != nil {
			msg = oneLine(*c.Error, 200)
		}
		ui.noteLocked("✗ %s", msg)
		ui.startSpinLocked("waiting for the model")
	case acp.CompactionCancelled:
		ui.noteLocked("✗ compaction cancelled")
	}
}

// failureText is the first line of a failed tool call's text content.
func failureText(content []acp.ToolCallContent) string {
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			if line := oneLine(c.Content.Content.Text.Text, 120); line != "" {
				return ": " + line
			}
		}
	}
	return ""
}

// Status writes one line about the session to stderr.
func (ui *UI) Status(format string, args ...any) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.noteLocked("%s", ui.dim(termsafe.Text(fmt.Sprintf(format, args...))))
}

// Finish ends the answer with a newline and stops progress.
func (ui *UI) Finish() {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.live = liveView{}
	ui.stopSpinLocked()
	ui.endThoughtLocked()
	if ui.opt.Answer != nil {
		ui.opt.Answer.End()
	}
	if ui.midLine {
		fmt.Fprintln(ui.out)
		ui.midLine = false
	}
}

// Close stops the progress line for good.
func (ui *UI) Close() {
	ui.mu.Lock()
	ui.stopSpinLocked()
	ui.mu.Unlock()
}

// --- permission ---

// askPermission answers a permission request: --yes allows once, a person
// at a terminal chooses, and without either the request is refused.
func (ui *UI) askPermission(p *acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	title := termsafe.Line(p.ToolCall.Title)
	if title == "" {
		title = ui.titles[p.ToolCall.ToolCallID]
	}
	pick := func(kinds ...acp.PermissionOptionKind) (acp.PermissionOption, bool) {
		for _, k := range kinds {
			for _, o := range p.Options {
				if o.Kind == k {
					return o, true
				}
			}
		}
		return acp.PermissionOption{}, false
	}
	selected := func(o acp.PermissionOption) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: "selected", OptionID: o.OptionID}}
	}
	refuse := func() acp.RequestPermissionResponse {
		if o, ok := pick(acp.PermissionRejectOnce, acp.PermissionRejectAlways); ok {
			return selected(o)
		}
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: "cancelled"}}
	}

	if ui.opt.Yes {
		if o, ok := pick(acp.PermissionAllowOnce, acp.PermissionAllowAlways); ok {
			ui.noteLocked("✓ allowed (--yes): %s", title)
			return selected(o)
		}
	}
	if !ui.inTTY && ui.opt.ReadLine == nil { // the chat reads answers from its input, terminal or not
		ui.noteLocked("✗ refused: %s — exec cannot ask without a terminal; rerun with --yes to allow", title)
		return refuse()
	}
	ui.stopSpinLocked()
	ui.flushAnswerLocked()
	ui.endThoughtLocked()
	ui.breakLineLocked()
	ui.writeQuestionLocked(p, title)
	for i, o := range p.Options {
		fmt.Fprintf(ui.errw, "  %d) %s\n", i+1, termsafe.Line(o.Name))
	}
	for {
		prompt := fmt.Sprintf("choose 1-%d: ", len(p.Options))
		line, err := ui.readAnswerLocked(prompt)
		if err != nil && line == "" {
			fmt.Fprintln(ui.errw)
			ui.noteLocked("✗ refused: %s (no answer)", title)
			return refuse()
		}
		n, convErr := strconv.Atoi(strings.TrimSpace(line))
		if convErr == nil && n >= 1 && n <= len(p.Options) {
			o := p.Options[n-1]
			if o.Kind == acp.PermissionRejectOnce || o.Kind == acp.PermissionRejectAlways {
				ui.noteLocked("✗ %s: %s", termsafe.Line(o.Name), title)
			}
			ui.startSpinLocked("running " + title)
			return selected(o)
		}
	}
}

// --- progress ---

// Waiting starts the progress line with a label.
func (ui *UI) Waiting(label string) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.startSpinLocked(label)
}

// StopProgress removes the progress line.
func (ui *UI) StopProgress() {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.stopSpinLocked()
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
