package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Subagents: the task tool hands a self-contained task to a child session
// with its own context window and read-only tools. The child is an
// ordinary stored session (loadable, its turn leased, cancelled and
// permission-checked like any turn); its session metadata names its parent
// (subagentLink). The parent's model sees only the child's final report;
// the client sees the child's work as the child's own session updates,
// announced on the parent with subagent_update (SDK 2.4, unstable), which
// is why the tool is offered only to a client that advertised
// `subagents`. A child gets no task tool: depth is one.

// runSubagent creates the child session, runs its turn and returns its
// report as the task call's result.
func (tr *turns) runSubagent(ctx context.Context, parent *persistence.Session, env *tool.Env, callID, title, prompt string) tool.Result {
	limits := tr.cfg.Subagents.withDefaults()
	select {
	case tr.children <- struct{}{}:
		defer func() { <-tr.children }()
	default:
		return tool.Failure("the limit of %d subagents running at once is reached (setting limits.subagents, env CROW_MAX_SUBAGENTS): do this task yourself, or try again once one has finished", limits.MaxConcurrent)
	}
	parentSess := tr.sessions.get(parent.ID)
	steps, refund, refusal := tr.reserveChild(parentSess, parent, limits)
	if refusal != "" {
		return tool.Failure("%s", refusal)
	}
	child, err := tr.createChild(ctx, parent, callID, title)
	if err != nil {
		refund(0)
		return tool.Failure("could not start the subagent: %v", err)
	}
	// The child's state in this process goes with its turn (a child's
	// context cache would otherwise stay for the connection's life).
	defer tr.sessions.drop(child.ID)
	ref := &tool.ChildSession{SessionID: child.ID, Title: title, Description: taskDescription(prompt)}
	tr.sendUpdate(ctx, parentSess, acp.SubagentUpdate{
		SessionID: child.ID, Title: ref.Title, Description: ref.Description,
		Capabilities: &acp.SubagentSessionCapabilities{Cancel: &acp.Marker{}},
		State:        &acp.SubagentState{State: acp.SubagentRunning},
		Meta:         subagentMeta(callID),
	}.Update())
	limits.turnLeft = steps
	run := tr.runChild(ctx, child, prompt, limits)
	refund(run.steps)
	tr.addChildCost(ctx, parentSess, child.ID)
	ref.StopReason = string(run.stop)
	tr.sendUpdate(context.WithoutCancel(ctx), parentSess, acp.SubagentUpdate{
		SessionID: child.ID, State: &acp.SubagentState{State: acp.SubagentIdle, StopReason: run.stop, Usage: run.usage},
	}.Update())
	res := run.result(ctx, env)
	res.Child = ref
	return res
}

// reserveChild takes one more child, and the model requests it may make,
// from the running turn of parent: at most limits.PerTurn children, and at
// most maxModelCalls requests for all of them. refund gives back the
// requests the child did not use; refusal, when not "", is why the task
// call fails, for the model.
func (tr *turns) reserveChild(parent *session, s *persistence.Session, limits SubagentLimits) (steps int, refund func(used int), refusal string) {
	pool := request.MaxModelCalls(tr.cfg.MaxModelCalls, tr.sessionModel(s))
	parent.mu.Lock()
	defer parent.mu.Unlock()
	t := parent.turn
	if t == nil { // not reached: a task call runs in its session's turn
		t = &turn{}
	}
	taken := &t.subagents
	switch {
	case taken.started >= limits.PerTurn:
		return 0, nil, fmt.Sprintf("this turn has started its limit of %d subagents (setting limits.subagents_per_turn, env CROW_SUBAGENTS_PER_TURN): "+
			"do the rest of the work yourself, or end the turn with what you have and say what is left", limits.PerTurn)
	case taken.steps >= pool:
		return 0, nil, fmt.Sprintf("this turn's subagents have used all %d model requests one turn may make (setting max_model_calls, env CROW_MAX_MODEL_CALLS): "+
			"do the rest of the work yourself, or end the turn with what you have and say what is left", pool)
	}
	steps = min(limits.MaxSteps, pool-taken.steps)
	taken.started++
	taken.steps += steps
	return steps, func(used int) {
		parent.mu.Lock()
		taken.steps -= steps - min(used, steps)
		parent.mu.Unlock()
	}, ""
}

// subagentMeta links a subagent_update to the parent's task call.
func subagentMeta(callID string) acp.Meta {
	b, _ := json.Marshal(map[string]string{"crow/parentToolCallId": callID})
	return b
}

// taskDescription is the task's first lines, for the client's display.
func taskDescription(prompt string) string {
	return shorten(strings.Map(dropControl, strings.Join(strings.Fields(prompt), " ")), 200)
}

// createChild stores the child session: the parent's directories, model
// and mode, no MCP servers, and the subagent instructions appended to its
// system prompt.
func (tr *turns) createChild(ctx context.Context, parent *persistence.Session, callID, title string) (*persistence.Session, error) {
	pm := decodeMeta(parent.Metadata)
	meta := sessionMeta{
		AdditionalDirectories: pm.AdditionalDirectories,
		Model:                 pm.Model,
		Mode:                  pm.Mode,
		SystemPrompt:          &clientPrompt{Mode: acp.SystemPromptAppend, Text: subagentInstructions},
		Subagent:              &subagentLink{ParentSessionID: parent.ID, ParentToolCallID: callID},
	}
	child := &persistence.Session{ID: request.NewID("sess_"), Cwd: parent.Cwd, Title: title, Metadata: encodeMeta(meta)}
	if err := tr.store.CreateSession(context.WithoutCancel(ctx), child); err != nil {
		return nil, storeError("create the subagent's session", err)
	}
	tr.sessions.get(child.ID).markOpened()
	// The frame log gives the child its own stream from here on.
	tr.record(ctx, child.ID, persistence.EventSessionCreated, map[string]any{"subagentOf": parent.ID, "toolCallId": callID})
	tr.log.Info("subagent started", zap.String("session", child.ID), zap.String("parent", parent.ID))
	return child, nil
}

// childRun is how a child's turn ended.
type childRun struct {
	stop   acp.StopReason // "" when it failed
	report string         // the child's last reply without tool calls
	steps  int
	usage  *acp.Usage
	err    error
	limit  string // which limit stopped it, for the parent's model
}

// result is the task call's result: the report, cut to the tool output
// limit (the whole of it stays readable with read_output). ctx is the
// parent's turn: a child cancelled while it goes on was stopped alone.
func (r childRun) result(ctx context.Context, env *tool.Env) tool.Result {
	switch {
	case r.stop == acp.StopCancelled && ctx.Err() != nil:
		return tool.Failure("cancelled: the user cancelled the turn while the subagent worked (its own session keeps what it did)")
	case r.stop == acp.StopCancelled:
		return tool.Failure("the user stopped the subagent before it finished (session/cancel on its session); do not start it again unless asked")
	case r.err != nil:
		return tool.Failure("the subagent failed: %v", r.err)
	}
	report := strings.TrimSpace(r.report)
	if report == "" {
		report = "(the subagent ended without a report)"
	}
	if r.limit != "" {
		report = "Note: the subagent stopped at " + r.limit + " before it finished; this is its last answer.\n\n" + report
	}
	out := report
	full := ""
	if cut, ok := tool.Truncate(report, env.OutputLimit, "call read_output with this call's id to read the rest"); ok {
		out, full = cut, report
	}
	return tool.Result{Output: out, Full: full, Content: []acp.ToolCallContent{acp.ToolText(report)}}
}

// runChild runs the child's one turn as a prompt turn runs: its own turn
// slot (session/cancel on the child's id stops it), its own lease, the
// task stored as its user message before the model is called.
func (tr *turns) runChild(ctx context.Context, child *persistence.Session, prompt string, limits SubagentLimits) childRun {
	sess, turnCtx, err := tr.beginTurn(ctx, child.ID)
	if err != nil {
		return childRun{err: err}
	}
	defer sess.endTurn()
	turnCtx, lose := context.WithCancelCause(turnCtx)
	defer lose(nil)
	if err := tr.leases.hold(turnCtx, sess, lose); err != nil {
		return childRun{err: storeError("start the subagent", err)}
	}
	defer tr.leases.release(ctx, sess)
	persistCtx := context.WithoutCancel(turnCtx)

	parts := []persistence.Part{{Type: "text", Text: prompt}}
	user := &persistence.Message{Role: persistence.RoleUser, Content: prompt, Parts: parts, Status: persistence.StatusComplete}
	countTokens(tr.build.CounterFor(tr.sessionModel(child)), user)
	if err := tr.writes(sess).AppendMessages(persistCtx, child.ID, user); err != nil {
		return childRun{err: storeError("save the subagent's task", err)}
	}
	// The client never saw the task: it is shown as the child's prompt.
	tr.sendUpdate(turnCtx, sess, acp.SessionUpdate{UserMessageChunk: &acp.ContentChunk{
		Content: acp.TextBlock(prompt), MessageID: messageID(user)}})

	run := tr.childTurn(turnCtx, persistCtx, sess, child, limits)
	if turnCtx.Err() != nil {
		run.stop, run.err = acp.StopCancelled, nil
		if errors.Is(context.Cause(turnCtx), persistence.ErrLeaseLost) {
			run.stop, run.err = "", leaseLostError("go on with the subagent's session "+child.ID)
		}
	}
	return run
}

// childTurn calls the model until it answers without tool calls or a
// subagent limit (steps, tokens) is reached; runTurn with the child's
// limits and without its loop-guard notice.
func (tr *turns) childTurn(ctx, persistCtx context.Context, sess *session, s *persistence.Session, limits SubagentLimits) childRun {
	var run childRun
	usage := acp.Usage{}
	reported := false
	steps := min(limits.MaxSteps, request.MaxModelCalls(tr.cfg.MaxModelCalls, tr.sessionModel(s)))
	stoppedAt := fmt.Sprintf("its limit of %d model requests (setting limits.subagent_steps)", steps)
	if limits.turnLeft > 0 && limits.turnLeft < steps {
		steps = limits.turnLeft
		stoppedAt = fmt.Sprintf("the %d model requests left to this turn's subagents (together they may make max_model_calls)", steps)
	}
	recovered := false
	guard := newLoopGuard()
	for run.steps < steps {
		run.steps++
		res, err := tr.replyOnce(ctx, persistCtx, sess, s, &recovered)
		if err != nil {
			run.err = err
			return run
		}
		if res.Usage != nil {
			reported = true
			usage.InputTokens += res.Usage.PromptTokens
			usage.OutputTokens += res.Usage.CompletionTokens
			usage.TotalTokens += res.Usage.PromptTokens + res.Usage.CompletionTokens
			run.usage = &usage
		}
		if strings.TrimSpace(res.Text) != "" {
			run.report = res.Text
		}
		if len(res.ToolCalls) == 0 {
			run.stop = stopReason(res.FinishReason)
			return run
		}
		if err := tr.runToolCalls(ctx, persistCtx, sess, s, res.ToolCalls, guard); err != nil {
			run.err = err
			return run
		}
		if ctx.Err() != nil {
			run.stop = acp.StopCancelled
			return run
		}
		if guard.stopped() {
			run.stop, run.limit = acp.StopEndTurn, "the loop guard (it kept repeating one failing call)"
			return run
		}
		if reported && usage.TotalTokens >= limits.MaxTokens {
			run.stop, run.limit = acp.StopMaxTokens, fmt.Sprintf("its limit of %d tokens (setting limits.subagent_tokens)", limits.MaxTokens)
			return run
		}
	}
	run.stop, run.limit = acp.StopMaxTurnRequests, stoppedAt
	return run
}

// subagentReplay is the subagent_update a replay of the parent shows for
// a task call: the child announced as it ended, so a client can open it.
func subagentReplay(c *tool.ChildSession, callID string) acp.SessionUpdate {
	u := acp.SubagentUpdate{SessionID: c.SessionID, Title: c.Title, Description: c.Description,
		State: &acp.SubagentState{State: acp.SubagentIdle, StopReason: acp.StopReason(c.StopReason)},
		Meta:  subagentMeta(callID)}
	return u.Update()
}

// notChild is keep without subagents' children: session/list shows the
// sessions a user started; a child is reached through its parent (the
// subagent_update of its task call names it) and is loadable by id.
func notChild(keep func(*persistence.Session) bool) func(*persistence.Session) bool {
	return func(s *persistence.Session) bool {
		return !isSubagent(s) && (keep == nil || keep(s))
	}
}

// deleteChildren deletes the sessions the subagents of parentID ran,
// before the parent goes: session/list hides them, so a client could never
// delete them otherwise. Children are created in the parent's directory;
// its sessions are read in pages (at most maxListPages of them).
func (tr *turns) deleteChildren(ctx context.Context, parentID string) error {
	parent, err := tr.store.GetSession(ctx, parentID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var children []string
	cursor := ""
	for range maxListPages {
		page, next, err := tr.store.ListSessions(ctx, persistence.ListSessionsOptions{Cwd: parent.Cwd, Limit: persistence.MaxListLimit, Cursor: cursor})
		if err != nil {
			return err
		}
		for i := range page {
			if SubagentParent(&page[i]) == parentID {
				children = append(children, page[i].ID)
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	for _, id := range children {
		if err := tr.sessions.stopTurn(ctx, id); err != nil {
			return err
		}
		tr.sessions.drop(id)
		if err := tr.deleteStored(ctx, id); err != nil {
			return err
		}
		tr.log.Info("subagent session deleted with its parent", zap.String("session", id), zap.String("parent", parentID))
	}
	return nil
}

// addChildCost adds what the child's model requests cost to the parent's
// total: a session's cost is what its prompts cost, subagents included
// (the child keeps its own share too, shown when it is opened alone).
func (tr *turns) addChildCost(ctx context.Context, parent *session, childID string) {
	ctx = context.WithoutCancel(ctx)
	c, err := tr.store.GetSession(ctx, childID)
	if err != nil {
		return
	}
	cost := decodeMeta(c.Metadata).Cost
	if len(cost) == 0 {
		return
	}
	if _, err := tr.updateMeta(ctx, parent, func(_ *persistence.Session, m *sessionMeta) {
		for currency, v := range cost {
			m.addCost(currency, v)
		}
	}); err != nil {
		tr.log.Warn("could not add a subagent's cost to its parent's", zap.String("session", parent.id), zap.Error(err))
	}
}
