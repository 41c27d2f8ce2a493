package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// subagentTool is the name of the tool that starts a child session.
const subagentTool = "task"

// subagentInstructions are added to a child's system prompt.
const subagentInstructions = `You are a subagent: another agent handed you the task in the user message and
will read only your final answer. You cannot edit files or run commands; read, list and search.
Work on the task alone (nobody can answer questions), then end with one report: what you found,
with file paths and line numbers, and what you could not find out. Be concise.`

// subagentTools are a child's tools: the read-only built-ins, no MCP
// servers (what an MCP tool does is only its server's word) and no task
// tool.
func subagentTools() []tool.Tool {
	var out []tool.Tool
	for _, t := range tool.Builtins() {
		switch t.Definition().Name {
		case "read_file", "list_files", "search", "read_output":
			out = append(out, t)
		}
	}
	return out
}

// taskToolFor is the task tool of session s, nil where it is not offered:
// in a child, without tools, or to a client that cannot show children.
func (tr *turns) taskToolFor(s *persistence.Session) tool.Tool {
	if tr.cfg.NoTools || tr.cfg.Subagents.MaxConcurrent < 0 || isSubagent(s) || !tr.capabilities().SupportsSubagents() {
		return nil
	}
	return taskTool{a: tr, parent: s}
}

// taskTool is the task tool of one parent session.
type taskTool struct {
	a      *turns
	parent *persistence.Session
}

func (taskTool) Definition() provider.Tool {
	return provider.Tool{
		Name: subagentTool,
		Description: "Hand a self-contained task to a helper agent: explore part of the code, or answer a question about it. " +
			"It starts fresh (it cannot see this conversation, so say everything it needs), reads, lists and searches files but cannot edit or run commands, " +
			"and returns only its final report, which keeps long explorations out of your context. One task per call.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"description": map[string]any{"type": "string", "description": "A title for the task, 3-6 words"},
				"prompt":      map[string]any{"type": "string", "description": "The whole task: what to find out, where to look, what to report"},
			},
			"required": []string{"description", "prompt"},
		},
	}
}

type taskArgs struct {
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
}

func (t taskTool) Prepare(env *tool.Env, raw json.RawMessage) (*tool.Action, error) {
	var args taskArgs
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("invalid arguments: %v", err)
	}
	args.Prompt = strings.TrimSpace(args.Prompt)
	if args.Prompt == "" {
		return nil, errors.New("prompt is required: the whole task for the subagent")
	}
	if len(args.Prompt) > maxTaskBytes {
		return nil, fmt.Errorf("prompt is %d bytes, more than the %d a task may have: state the task shorter and let the subagent read the files", len(args.Prompt), maxTaskBytes)
	}
	title := taskTitle(args.Description, args.Prompt)
	callID := env.CallID
	return &tool.Action{
		Title: "Subagent: " + title, Kind: acp.ToolKindThink, Access: tool.AccessNone,
		Run: func(ctx context.Context, _ func([]acp.ToolCallContent)) tool.Result {
			return t.a.subagent(ctx, t.parent, env, callID, title, args.Prompt)
		},
	}, nil
}

// taskTitle is the child's title: the model's description on one line,
// else the start of the task.
func taskTitle(description, prompt string) string {
	title := strings.Join(strings.Fields(description), " ")
	if title == "" {
		title = deriveTitle([]persistence.Part{{Type: "text", Text: prompt}})
	}
	return shorten(strings.Map(dropControl, title), maxTaskTitleRunes)
}

// dropControl drops the control characters NormalizeTitle turns into
// spaces (C0, DEL, C1): in a task's one line they only split words.
func dropControl(r rune) rune {
	if unicode.IsControl(r) {
		return -1
	}
	return r
}
