package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// toolMeta is what a stored tool result carries (persistence.Message.Meta)
// so that session/load replays the call as it happened.
type toolMeta struct {
	Name      string                 `json:"name,omitempty"`
	Title     string                 `json:"title,omitempty"`
	Kind      acp.ToolKind           `json:"kind,omitempty"`
	Status    acp.ToolCallStatus     `json:"status,omitempty"`
	Locations []acp.ToolCallLocation `json:"locations,omitempty"`
	Content   []acp.ToolCallContent  `json:"content,omitempty"`
	Full      string                 `json:"full,omitempty"` // the whole output when the model's copy was cut
	Plan      *acp.Plan              `json:"plan,omitempty"`
	Child     *tool.ChildSession     `json:"child,omitempty"` // a task call's subagent session
}

// toolDefinitions are the tools offered to the model in session s: the
// built-ins, then the tools of the session's connected MCP servers.
func (tr *turns) toolDefinitions(sess *session, s *persistence.Session) []provider.Tool {
	// Below 4k tokens (the minimal prompt tier) the parameters' prose would
	// take a third of the window: their names and types are sent alone.
	terse := sysprompt.TierFor(tr.sessionModel(s).ContextWindow) == sysprompt.Minimal
	var out []provider.Tool
	for _, t := range tr.tools(sess, s) {
		d := t.Definition()
		if terse {
			d = tool.Terse(d)
		}
		out = append(out, d)
	}
	return out
}

// tools lists the tools of session s in the order offered.
func (tr *turns) tools(sess *session, s *persistence.Session) []tool.Tool {
	if tr.cfg.NoTools {
		return nil
	}
	if isSubagent(s) {
		return subagentTools()
	}
	m := tr.sessionModel(s)
	all := tool.ForModel(cmp.Or(m.Name, tr.cfg.Model), m.EditTool)
	if t := tr.taskToolFor(s); t != nil {
		all = append(all, t)
	}
	if set := sess.mcpServers(); set != nil {
		all = append(all, set.Tools()...)
	}
	return all
}

// awaitMCP waits, at the start of a turn, for the session's MCP servers
// still connecting (bounded by their connect timeout and by the turn), and
// tells the user about any that failed.
func (tr *turns) awaitMCP(ctx context.Context, sess *session, s *persistence.Session) {
	set := sess.mcpServers()
	if set == nil {
		return
	}
	set.Wait(ctx)
	for _, f := range set.TakeFailures() {
		tr.log.Warn("mcp server failed", zap.String("session", s.ID), zap.String("error", f))
		tr.sendUpdate(ctx, sess, mcpFailureUpdate(tr.capabilities(), f))
	}
}

// mcpFailureUpdate reports an MCP server that did not start outside the
// conversation: never as reply text, which a client merges into the
// model's answer. A client that takes notices gets one; any other a failed
// tool-call card (not stored, so not replayed).
func mcpFailureUpdate(caps acp.ClientCapabilities, failure string) acp.SessionUpdate {
	const title = "An MCP server did not start"
	if caps.SupportsNotices() {
		return acp.Notice{Severity: "error", Title: title, Description: failure}.Update()
	}
	return acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: request.NewID("mcp_"), Title: title, Kind: acp.ToolKindOther,
		Status: acp.ToolStatusFailed, Content: []acp.ToolCallContent{acp.ToolText(failure)}}}
}

// toolEnv is what tools may use in session s.
func (tr *turns) toolEnv(sess *session, s *persistence.Session) *tool.Env {
	tr.mu.Lock()
	caps := tr.clientCaps
	tr.mu.Unlock()
	var client acp.Client
	if tr.client != nil {
		client = tool.BoundClient(tr.client, tr.cfg.ClientCallTimeout)
	}
	env := &tool.Env{
		SessionID:        s.ID,
		Roots:            tool.ResolveRoots(workspaceRoots(s)),
		ClientRoots:      tool.ClientRoots(workspaceRoots(s)),
		Protected:        tool.ResolveRoots(tr.cfg.ProtectedFiles),
		ChildEnv:         tr.cfg.ChildEnv,
		Client:           client,
		ClientRead:       caps.FS.ReadTextFile,
		ClientWrite:      caps.FS.WriteTextFile,
		ClientTerminal:   caps.Terminal,
		CommandTimeout:   tr.cfg.CommandTimeout,
		CommandOutputCap: tr.cfg.CommandOutputCap,
		OutputLimit:      request.ToolOutputLimit(tr.cfg.ToolOutputLimit, tr.sessionModel(s)),
		Images:           tr.sessionModel(s).Images,
		ImageBytes:       tr.cfg.Images.ImageBytes,
		Reads:            sess.fileReads(),
		StoredOutput: func(ctx context.Context, callID string) (string, error) {
			return tr.storedOutput(ctx, s.ID, callID)
		},
	}
	tr.elicitInto(env, caps)
	if !isSubagent(s) {
		sess.recordChanges(env, s)
	}
	return env
}

// storedOutput is the full output of an earlier tool call of the session.
func (tr *turns) storedOutput(ctx context.Context, sessionID, callID string) (string, error) {
	msgs, err := tr.store.Messages(ctx, sessionID, persistence.MessageFilter{})
	if err != nil {
		return "", fmt.Errorf("read stored output: %v", err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != persistence.RoleTool || m.ToolCallID != callID {
			continue
		}
		var meta toolMeta
		_ = json.Unmarshal(m.Meta, &meta)
		if meta.Full != "" {
			return meta.Full, nil
		}
		return m.Content, nil
	}
	return "", fmt.Errorf("no tool call with id %q in this session", callID)
}

// runToolCalls runs the model's tool calls one after the other and stores a
// result for every call, so the rebuilt context never holds a call without
// its result. Once the turn is cancelled, or stopped by the loop guard, the
// remaining calls are not run but still answered.
func (tr *turns) runToolCalls(ctx, persistCtx context.Context, sess *session, s *persistence.Session, calls []provider.ToolCall, guard *loopGuard) error {
	env := tr.toolEnv(sess, s)
	byName := make(map[string]tool.Tool)
	schemas := make(map[string]toolSchema)
	for _, t := range tr.tools(sess, s) {
		d := t.Definition()
		byName[d.Name], schemas[d.Name] = t, schemaOf(d.Parameters)
	}
	// Only one editing tool is offered (tool.ForModel), but a call to the
	// other is run too: a model calls the one it was trained on. It is not
	// listed to the model as available.
	if len(byName) > 0 && !isSubagent(s) {
		for _, t := range tool.EditTools() {
			if d := t.Definition(); byName[d.Name] == nil {
				schemas[d.Name] = schemaOf(d.Parameters)
			}
		}
	}
	var asked *askedInText
	for _, c := range calls {
		if ctx.Err() != nil || guard.stopped() || asked != nil {
			status, why := persistence.StatusCancelled, "Error: not run: the user cancelled the turn."
			switch {
			case ctx.Err() != nil:
			case asked != nil:
				status, why = persistence.StatusComplete, notRunAfterQuestion
			default:
				status, why = persistence.StatusComplete, "Error: not run: the turn was stopped because the same failing call kept being repeated."
			}
			msg := &persistence.Message{Role: persistence.RoleTool, ToolCallID: c.ID, Status: status, Content: why}
			if err := tr.writes(sess).AppendMessages(persistCtx, s.ID, msg); err != nil {
				return storeError("save tool result", err)
			}
			continue
		}
		if err := tr.runToolCall(ctx, persistCtx, sess, s, env, byName, schemas, c, guard); err != nil {
			if q, ok := err.(*askedInText); ok {
				asked = q
				continue
			}
			return err
		}
	}
	if asked != nil {
		return asked
	}
	return nil
}

// runToolCall reports, authorizes, runs and stores one call:
// tool_call (pending) → permission → in_progress → completed | failed.
// The call runs as repaired (repair.go): permissions, rules and the user
// see the tool and arguments that actually run, the stored assistant
// message keeps what the model sent, and the result's note says what ran.
func (tr *turns) runToolCall(ctx, persistCtx context.Context, sess *session, s *persistence.Session, env *tool.Env,
	byName map[string]tool.Tool, schemas map[string]toolSchema, sent provider.ToolCall, guard *loopGuard) error {
	c := sent
	rep, found := repairCall(sent.Name, sent.Arguments, schemas)
	if found {
		c.Name, c.Arguments = rep.Name, rep.Args
		if args := strings.TrimSpace(c.Arguments); strings.HasPrefix(args, "{") && json.Valid([]byte(args)) {
			c.ArgumentsError = ""
		}
	}
	note := rep.Note(sent.Name)
	var rawInput json.RawMessage
	if json.Valid([]byte(c.Arguments)) {
		rawInput = json.RawMessage(c.Arguments)
	}
	call := &acp.ToolCall{ToolCallID: c.ID, Title: c.Name, Kind: acp.ToolKindOther, Status: acp.ToolStatusPending, RawInput: rawInput}
	key := guard.key(c.Name, c.Arguments)
	save := func(res tool.Result, status persistence.MessageStatus) error {
		if status != persistence.StatusCancelled {
			guard.observe(key, res)
		}
		if res.Output != "" {
			res.Output = note + res.Output
		}
		return tr.saveToolResult(persistCtx, sess, s, c, call, res, status)
	}
	// failEarly answers a call that cannot even be prepared; the user still
	// sees it, already failed.
	failEarly := func(res tool.Result) error {
		call.Status, call.Content = acp.ToolStatusFailed, res.Content
		tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{ToolCall: call})
		return save(res, persistence.StatusFailed)
	}
	if why := guard.refuse(key); why != "" {
		call.Status, call.Content = acp.ToolStatusFailed, []acp.ToolCallContent{acp.ToolText(why)}
		tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{ToolCall: call})
		return tr.saveToolResult(persistCtx, sess, s, c, call, tool.Result{Output: "Error: " + why, Failed: true}, persistence.StatusFailed)
	}
	if rep.Refusal != "" {
		return failEarly(tool.Failure("%s", rep.Refusal))
	}
	t := byName[c.Name]
	if t == nil && len(byName) > 0 && !isSubagent(s) {
		t = unofferedEditTool(c.Name)
	}
	if t == nil {
		if len(byName) == 0 {
			return failEarly(tool.Failure("there is no tool named %q: no tools are available in this session", c.Name))
		}
		return failEarly(tool.Failure("there is no tool named %q; available tools: %s", c.Name, strings.Join(sortedNames(byName), ", ")))
	}
	if c.ArgumentsError != "" {
		return failEarly(tool.Failure("the arguments of %s are not a JSON object (%s); call it again with valid JSON", c.Name, c.ArgumentsError))
	}
	callEnv := *env
	callEnv.CallID = c.ID
	act, err := t.Prepare(&callEnv, json.RawMessage(c.Arguments))
	if err != nil {
		return failEarly(tool.Failure("%s: %v", c.Name, err))
	}
	call.Title, call.Kind, call.Locations = act.Title, act.Kind, act.Locations

	if c.Name == planTool {
		res := act.Run(ctx, func([]acp.ToolCallContent) {})
		if res.Plan != nil {
			tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{Plan: res.Plan})
		}
		call.Status = acp.ToolStatusCompleted
		return save(res, persistence.StatusComplete)
	}

	tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{ToolCall: call})
	finish := func(res tool.Result, status persistence.MessageStatus) error {
		call.Status = acp.ToolStatusCompleted
		if res.Failed || status != persistence.StatusComplete {
			call.Status = acp.ToolStatusFailed
		}
		tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{
			ToolCallID: c.ID, Status: call.Status, Content: res.Content}})
		if res.Release != nil {
			res.Release()
		}
		if err := save(res, status); err != nil || res.EndTurn == "" || status != persistence.StatusComplete {
			return err
		}
		return &askedInText{text: res.EndTurn}
	}

	verdict, why, err := tr.authorize(ctx, sess, s, call, act)
	if err != nil {
		return err
	}
	switch verdict {
	case verdictCancelled:
		return finish(tool.Failure("cancelled: the user cancelled the turn before permission was given"), persistence.StatusCancelled)
	case verdictRejected, verdictFailed:
		return finish(tool.Failure("%s", why), persistence.StatusComplete)
	}

	if c.Name == commandTool {
		// The work tree is kept before the turn's first command, so that
		// /undo can take back what commands changed (undo.go).
		if err := sess.snapshotBeforeCommand(persistCtx, s); err != nil {
			return finish(tool.Failure("not run: the work tree could not be recorded for undo: %v", err), persistence.StatusComplete)
		}
	}
	tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: c.ID, Status: acp.ToolStatusInProgress}})
	res := act.Run(ctx, func(content []acp.ToolCallContent) {
		tr.sendUpdate(persistCtx, sess, acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: c.ID, Content: content}})
	})
	status := persistence.StatusComplete
	if ctx.Err() != nil && res.Failed {
		status = persistence.StatusCancelled
	}
	res.Output += tr.build.NestedInstructions(persistCtx, &sess.req, s, call.Locations)
	return finish(res, status)
}

// saveToolResult stores the model's view of a result with what replay needs.
func (tr *turns) saveToolResult(ctx context.Context, sess *session, s *persistence.Session, c provider.ToolCall, call *acp.ToolCall,
	res tool.Result, status persistence.MessageStatus) error {
	meta := toolMeta{
		Name: c.Name, Title: call.Title, Kind: call.Kind, Status: call.Status,
		Locations: call.Locations, Content: replayContent(res), Full: res.Full, Plan: res.Plan, Child: res.Child,
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("encode tool meta: %w", err)
	}
	if res.Output == "" {
		res.Output = "(no output)"
	}
	msg := &persistence.Message{Role: persistence.RoleTool, ToolCallID: c.ID, Content: res.Output, Status: status, Meta: raw}
	if res.Image != nil {
		msg.Parts = []persistence.Part{{Type: "image", MimeType: res.Image.MimeType, Data: res.Image.Data}}
	}
	countTokens(tr.build.CounterFor(tr.sessionModel(s)), msg)
	if err := tr.writes(sess).AppendMessages(ctx, s.ID, msg); err != nil {
		return storeError("save tool result", err)
	}
	return nil
}

// replayContent is the content a replay shows: a terminal is gone after
// the call, so its output is shown as text instead.
func replayContent(res tool.Result) []acp.ToolCallContent {
	out := make([]acp.ToolCallContent, 0, len(res.Content))
	for _, c := range res.Content {
		if c.Terminal != nil {
			text := res.Output
			if res.Full != "" {
				text = res.Full
			}
			c = acp.ToolText(tool.ReplayText(text))
		}
		out = append(out, c)
	}
	return out
}

// unofferedEditTool is the editing tool named name that tool.ForModel did
// not offer (runToolCalls accepts it), or nil.
func unofferedEditTool(name string) tool.Tool {
	for _, t := range tool.EditTools() {
		if t.Definition().Name == name {
			return t
		}
	}
	return nil
}

func sortedNames(m map[string]tool.Tool) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
