// Package tool holds crow-acp's built-in tools, one file each with its
// description and JSON schema next to the code. A tool validates its
// arguments in Prepare, which says what the call will touch (so the agent can
// report it and ask permission) and returns the Action that runs it.
//
// Descriptions and schemas are deliberately terse: they are sent with every
// model request and count against small context windows.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Access is what a call does, which decides whether it needs permission.
type Access int

const (
	AccessNone    Access = iota // touches nothing outside the agent (plans, stored output)
	AccessRead                  // reads files
	AccessEdit                  // changes files
	AccessExecute               // runs a command
	AccessOther                 // an external tool (MCP) that may do anything
)

// Action is one prepared tool call.
type Action struct {
	Title     string
	Kind      acp.ToolKind
	Locations []acp.ToolCallLocation
	Access    Access
	// Outside lists the resolved paths the call touches outside every root.
	Outside []string
	// Server names the MCP server of an external tool ("" for built-ins).
	Server string
	// AlwaysAsk, when set, says why this call must be asked about every
	// time (a write to .git/, a command line no rule can cover): stored
	// "always" rules do not approve it and none is offered. Bypass mode
	// still runs it.
	AlwaysAsk string
	// Commands are the simple commands of a command line, as parsed, for
	// the permission request to show.
	Commands []string
	// CommandKeys are the rule keys a command line needs, one per distinct
	// command ("command:ls", "command:git status"); they take the place of
	// PermissionKey.
	CommandKeys []string
	// PermissionKey names what an "always" decision covers, e.g. "edit" or
	// "command:go". Empty for calls that never ask.
	PermissionKey string
	// Preview, when set, works out what Run would do without doing it (an
	// edit's diff), for the permission request to show. Its error is the
	// one Run would fail with: the call cannot succeed. Once previewed, Run
	// does what was shown or fails if the file changed in between.
	Preview func(ctx context.Context) ([]acp.ToolCallContent, error)
	// Run performs the call. progress shows content while it runs (the
	// embedded terminal of a command).
	Run func(ctx context.Context, progress func([]acp.ToolCallContent)) Result
}

// Result is what a call produced.
type Result struct {
	Output  string                // what the model reads (possibly cut, with a note)
	Full    string                // the complete output when Output was cut
	Content []acp.ToolCallContent // what the client shows
	Failed  bool
	Plan    *acp.Plan // set by update_plan
	// Release, when set, frees what Content shows (a client terminal). The
	// caller runs it once, after the final update of the call was sent.
	Release func()
	// Child names the session a subagent's task ran in (agent/subagent.go),
	// kept with the stored result so that a replay announces it again.
	Child *ChildSession
	// EndTurn, when set, is the agent's reply that ends the turn after
	// this call: a question nobody could be asked interactively.
	EndTurn string
	// Image is an image the model gets with the result (read_file).
	Image *Image
}

// ChildSession is a subagent's child session as its parent shows it.
type ChildSession struct {
	SessionID   string `json:"sessionId"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	StopReason  string `json:"stopReason,omitempty"`
}

// Tool is one function the model can call.
type Tool interface {
	Definition() provider.Tool
	Prepare(env *Env, args json.RawMessage) (*Action, error)
}

// Failure is a failed result whose text the model and the user both see.
func Failure(format string, args ...any) Result {
	msg := fmt.Sprintf(format, args...)
	return Result{Output: "Error: " + msg, Content: []acp.ToolCallContent{acp.ToolText(msg)}, Failed: true}
}

// textResult is a successful plain-text result.
func textResult(out string) Result {
	return Result{Output: out, Content: []acp.ToolCallContent{acp.ToolText(out)}}
}

// decode unmarshals the model's arguments; the error is written for the model.
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

// --- JSON schema helpers: keep schemas small ---

type props map[string]any

func object(p props, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": map[string]any(p)}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
func integer(desc string) map[string]any {
	return map[string]any{"type": "integer", "description": desc}
}

// --- output limits ---

// Truncate cuts s to about limit bytes for the model, keeping the head and
// the tail (errors are usually at the end) and saying what was left out and
// how to read it. It reports whether s was cut.
func Truncate(s string, limit int, hint string) (string, bool) {
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	head := cutAtLine(s[:limit*2/5], false)
	tail := cutAtLine(s[len(s)-limit*3/5:], true)
	omitted := s[len(head) : len(s)-len(tail)]
	note := fmt.Sprintf("\n[... %d bytes (%d lines) omitted of %d bytes; %s ...]\n",
		len(omitted), strings.Count(omitted, "\n"), len(s), hint)
	return head + note + tail, true
}

// cutAtLine trims a partial line off the end (or, for a tail, the start).
func cutAtLine(s string, tail bool) string {
	if tail {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			return s[i+1:]
		}
		return s
	}
	if i := strings.LastIndexByte(s, '\n'); i > 0 {
		return s[:i+1]
	}
	return s
}

// cutResult applies the model's output limit to a text result, keeping the
// full text for read_output.
func cutResult(env *Env, r Result) Result {
	if out, cut := Truncate(r.Output, env.OutputLimit, "call read_output with this call's id to read the rest"); cut {
		r.Full, r.Output = r.Output, out
	}
	return r
}

func ptr[T any](v T) *T { return &v }

// Image is an image a tool gives the model (read_file of a PNG, JPEG, GIF
// or WebP): the agent stores it with the result and sends it as an image
// part the chat APIs accept (a tool message carries text only).
type Image struct {
	MimeType string
	Data     string // base64
}
