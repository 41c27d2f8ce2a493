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
	"time"

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

// Env is what a tool may use while it runs in one session.
type Env struct {
	SessionID string
	// CallID is the id of the call being prepared (set per call; a
	// question or a subagent is tied to it).
	CallID string
	// Roots are the workspace directories, symlinks resolved: the session's
	// cwd first, then any additional directories. Paths inside them are
	// "inside"; everything else needs the user's permission.
	Roots []string
	// ClientRoots are the same roots as the client named them (index for
	// index): paths are shown to the client below these, never below a
	// root's resolved path, which the client may not know.
	ClientRoots []string
	// Protected are crow-acp's own files (configuration, credentials,
	// database, log; symlinks resolved, as ResolveRoots does): reading,
	// searching or writing them always asks, in every mode but bypass.
	// Writes under any .git directory and to a git directory's markers
	// (see gitMarker) always ask too.
	Protected []string
	Client    acp.Client
	// What the client offered in initialize; a method it did not offer is
	// never called.
	ClientRead, ClientWrite, ClientTerminal bool

	// ChildEnv is the environment commands run with (EnvPolicy.Environ);
	// nil = the default policy applied to crow-acp's own environment.
	ChildEnv []string

	CommandTimeout   time.Duration // default timeout of run_command
	CommandOutputCap int           // bytes of command output kept
	OutputLimit      int           // bytes of one result the model sees
	// Images: the session's model reads images (read_file then gives it
	// an image file as an image); ImageBytes bounds one (0: imagecheck's
	// default).
	Images     bool
	ImageBytes int
	// Reads is what the model has seen of the session's files (read_file,
	// write_file, edit_file); nil turns off the read-before-overwrite check.
	Reads *Reads
	// StoredOutput returns the full output of an earlier call of this
	// session (for read_output).
	StoredOutput func(ctx context.Context, callID string) (string, error)

	// Elicit asks the client with elicitation/create; nil when the client
	// did not advertise form elicitation (ask.go falls back).
	Elicit func(ctx context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error)
	// ElicitURL and CompleteElicitation pass an MCP server's URL
	// elicitations on; nil when the client did not advertise elicitation.url.
	ElicitURL           func(ctx context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error)
	CompleteElicitation func(ctx context.Context, n *acp.CompleteElicitationNotification) error
	// QuestionTimeout bounds an open question; 0 = DefaultQuestionTimeout.
	QuestionTimeout time.Duration
	// BeforeChange, when set, is called before a tool writes, creates or
	// deletes the file at p, while it still holds its old bytes (or is
	// absent): undo's checkpoint is stored first, so that no file changes
	// without one. An error leaves the file unchanged and fails the call.
	BeforeChange func(ctx context.Context, p Path) error
	// AfterChange, when set, is called once the tool changed the file at p
	// (undo compares it with what is there when asked to undo: a file
	// changed since by someone else is a conflict, not overwritten).
	AfterChange func(ctx context.Context, p Path)
}

// afterChange calls AfterChange if set.
func (e *Env) afterChange(ctx context.Context, p Path) {
	if e.AfterChange != nil {
		e.AfterChange(ctx, p)
	}
}

// beforeChange calls BeforeChange if set.
func (e *Env) beforeChange(ctx context.Context, p Path) error {
	if e.BeforeChange == nil {
		return nil
	}
	if err := e.BeforeChange(ctx, p); err != nil {
		return fmt.Errorf("%s was not changed: its checkpoint for undo could not be stored: %w", p.Display, err)
	}
	return nil
}

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

// Builtins returns the built-in tools, in the order offered to the model.
func Builtins() []Tool {
	return []Tool{readFile{}, writeFile{}, editFile{}, listFiles{}, search{}, runCommand{}, updatePlan{}, readOutput{}, askUser{}}
}

// The tools a model can edit files with.
const (
	EditFileTool   = "edit_file"
	ApplyPatchTool = "apply_patch"
)

// ForModel returns the built-in tools offered to model, with apply_patch
// in place of edit_file for the model families trained on it (GPT, the o
// series, codex). editTool overrides the choice: EditFileTool or
// ApplyPatchTool; "" chooses by the model's name.
func ForModel(model, editTool string) []Tool {
	tools := Builtins()
	if editTool == ApplyPatchTool || editTool == "" && PrefersApplyPatch(model) {
		for i, t := range tools {
			if _, ok := t.(editFile); ok {
				tools[i] = applyPatch{}
			}
		}
	}
	return tools
}

// EditTools are both editing tools. ForModel offers one of them; the agent
// accepts a call to either, since a model calls the one it was trained on
// whatever it was offered.
func EditTools() []Tool { return []Tool{editFile{}, applyPatch{}} }

// PrefersApplyPatch reports whether model's name is of a family trained on
// codex's apply_patch (gpt-*, o1/o3/o4*, *codex*), after any provider
// prefix ("openai/gpt-5").
func PrefersApplyPatch(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "gpt-"), strings.Contains(m, "codex"):
		return true
	case len(m) >= 2 && m[0] == 'o' && (m[1] == '1' || m[1] == '3' || m[1] == '4'):
		return len(m) == 2 || m[2] == '-'
	}
	return false
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
