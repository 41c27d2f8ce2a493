package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

type verdict int

const (
	verdictAllowed verdict = iota
	verdictRejected
	verdictCancelled
	verdictFailed // the call cannot succeed (its preview failed); nobody was asked
)

// Permission option ids sent in session/request_permission.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// permissionKeys are the rule keys a call needs allowed in the session's
// mode; none means it runs without asking. Paths outside the workspace
// always need their own permission, whatever the mode.
func permissionKeys(mode string, act *tool.Action) []string {
	var keys []string
	switch act.Access {
	case tool.AccessEdit:
		if mode != ModeAcceptEdits && mode != ModeBypass {
			keys = append(keys, act.PermissionKey)
		}
	case tool.AccessExecute, tool.AccessOther:
		if mode != ModeBypass {
			if act.CommandKeys != nil {
				keys = append(keys, act.CommandKeys...)
			} else if act.PermissionKey != "" {
				keys = append(keys, act.PermissionKey)
			}
		}
	}
	for _, p := range act.Outside {
		keys = append(keys, "path:"+p)
	}
	return keys
}

// authorize decides whether a call may run: by mode, by the project's
// stored "always" rules, or by asking the user. why explains a rejection to
// the model and the user, or why the call cannot succeed (verdictFailed).
func (tr *turns) authorize(ctx context.Context, sess *session, s *persistence.Session, call *acp.ToolCall, act *tool.Action) (v verdict, why string, err error) {
	mode := tr.sessionMode(ctx, s.ID)
	if mode == ModePlan && act.Server == "" && (act.Access == tool.AccessEdit || act.Access == tool.AccessExecute) {
		return verdictRejected, "refused: the session is in read-only planning mode, where edits and commands are disabled. Finish the plan; the user can switch modes to carry it out.", nil
	}
	keys := permissionKeys(mode, act)
	// A call no rule may cover (a write under .git/, a command line that
	// cannot be fully checked) is asked about every time but in bypass.
	mustAsk := act.AlwaysAsk != "" && mode != ModeBypass
	askWhy := act.AlwaysAsk
	// Planning mode is read-only, and what an MCP tool does is only the
	// server's word: every call is asked about, whatever rules exist.
	if mode == ModePlan && act.Server != "" {
		mustAsk, askWhy = true, "the session is in read-only planning mode and MCP server "+act.Server+" may change things."
	}
	if len(keys) == 0 && !mustAsk {
		return verdictAllowed, "", nil
	}
	rules, err := tr.store.PermissionRules(ctx, s.Cwd)
	if err != nil {
		if ctx.Err() != nil {
			return verdictCancelled, "", nil
		}
		return 0, "", storeError("read permission rules", err)
	}
	stored := make(map[string]bool, len(rules))
	for _, r := range rules {
		if emptyProgramRule(r.Key) {
			continue // made by an older matcher; it covers nothing (migration 0006 removes them)
		}
		stored[r.Key] = r.Allow
	}
	asking := false
	for _, k := range keys {
		allow, ok := stored[k]
		if ok && !allow {
			return verdictRejected, fmt.Sprintf("rejected: the user chose to always reject %s in this project.", describeKey(k)), nil
		}
		if !ok {
			asking = true
		}
	}
	if !asking && !mustAsk {
		return verdictAllowed, "", nil
	}

	// Show what the call would do (an edit's diff) so the user approves
	// the change itself, not just its title.
	var content []acp.ToolCallContent
	if act.Preview != nil {
		c, err := act.Preview(ctx)
		switch {
		case ctx.Err() != nil:
			return verdictCancelled, "", nil
		case err != nil && len(act.Outside) == 0:
			// Asking to approve an edit that cannot happen is noise.
			return verdictFailed, err.Error(), nil
		case err != nil:
			// Outside the workspace the error would tell the model about
			// a file it has no permission to read yet (whether it exists,
			// whether some text is in it): only the user sees it.
			content = []acp.ToolCallContent{acp.ToolText("This call cannot succeed as asked: " + err.Error())}
		default:
			content = c
		}
	}
	if len(act.Commands) > 0 {
		content = append(content, acp.ToolText("Commands in this line:\n"+bulleted(act.Commands)))
	}
	if mustAsk {
		content = append(content, acp.ToolText("Asked every time: "+askWhy))
	}
	req := &acp.RequestPermissionRequest{
		SessionID: s.ID,
		ToolCall: acp.ToolCallUpdate{ToolCallID: call.ToolCallID, Title: call.Title, Kind: call.Kind,
			Status: acp.ToolStatusPending, Content: content, Locations: call.Locations, RawInput: call.RawInput},
		// Short names: they are buttons. What the call touches is in the
		// tool call's title and locations.
		Options: permissionOptions(keys, mustAsk),
	}
	tr.subagentAsking(ctx, s, true)
	res, err := tr.client.RequestPermission(ctx, req)
	tr.subagentAsking(ctx, s, false)
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return verdictCancelled, "", nil
	}
	if err != nil {
		// Without an answer nothing risky runs.
		tr.log.Warn("permission request failed", zap.String("session", s.ID), zap.Error(err))
		return verdictRejected, fmt.Sprintf("rejected: permission could not be obtained (%v).", err), nil
	}
	if res.Outcome.Outcome == "cancelled" {
		return verdictCancelled, "", nil
	}
	save := func(allow bool, keys ...string) error {
		for _, k := range keys {
			r := &persistence.PermissionRule{Cwd: s.Cwd, Key: k, Allow: allow, SessionID: s.ID}
			if err := tr.writes(sess).SetPermissionRule(context.WithoutCancel(ctx), r); err != nil {
				return storeError("save permission rule", err)
			}
		}
		return nil
	}
	switch res.Outcome.OptionID {
	case optAllowOnce:
		return verdictAllowed, "", nil
	case optAllowAlways:
		if mustAsk {
			return verdictRejected, "rejected: this call cannot be allowed always, and the client answered with that option.", nil
		}
		return verdictAllowed, "", save(true, keys...)
	case optRejectAlways:
		if len(keys) == 0 {
			return verdictRejected, "rejected by the user.", nil
		}
		// Only the most specific key: rejecting one outside path must not
		// reject every edit.
		return verdictRejected, "rejected by the user (always).", save(false, keys[len(keys)-1])
	case optRejectOnce:
		return verdictRejected, "rejected by the user.", nil
	default:
		return verdictRejected, fmt.Sprintf("rejected: the client answered with an unknown option %q.", res.Outcome.OptionID), nil
	}
}

// permissionOptions are the choices offered: no "always allow" for a call
// that must be asked about every time, no "always reject" without a key.
func permissionOptions(keys []string, mustAsk bool) []acp.PermissionOption {
	opts := []acp.PermissionOption{{OptionID: optAllowOnce, Name: "Allow", Kind: acp.PermissionAllowOnce}}
	if !mustAsk {
		opts = append(opts, acp.PermissionOption{OptionID: optAllowAlways, Name: "Always allow", Kind: acp.PermissionAllowAlways})
	}
	opts = append(opts, acp.PermissionOption{OptionID: optRejectOnce, Name: "Reject", Kind: acp.PermissionRejectOnce})
	if len(keys) > 0 {
		opts = append(opts, acp.PermissionOption{OptionID: optRejectAlways, Name: "Always reject", Kind: acp.PermissionRejectAlways})
	}
	return opts
}

func bulleted(items []string) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString("- `" + it + "`\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// emptyProgramRule: a "command:" rule naming no program.
func emptyProgramRule(k string) bool {
	prog, ok := strings.CutPrefix(k, "command:")
	return ok && strings.TrimSpace(prog) == ""
}

// describeKey says in words what a rule key covers.
func describeKey(k string) string {
	kind, arg, _ := strings.Cut(k, ":")
	switch kind {
	case "edit":
		return "file edits"
	case "command":
		return fmt.Sprintf("`%s` commands", arg)
	case "path":
		return "access to " + arg
	case "mcp":
		return "the MCP tool " + arg
	case "read":
		return "reads"
	}
	return k
}

// subagentAsking tells the client, on the parent, that child s waits for
// the user's answer to a permission request (requires_action) and then
// runs again. Nothing for a session that is not a child.
func (tr *turns) subagentAsking(ctx context.Context, s *persistence.Session, asking bool) {
	parent := SubagentParent(s)
	if parent == "" {
		return
	}
	state := acp.SubagentRunning
	if asking {
		state = acp.SubagentRequiresAction
	}
	tr.sendUpdate(context.WithoutCancel(ctx), tr.sessions.get(parent), acp.SubagentUpdate{SessionID: s.ID, State: &acp.SubagentState{State: state}}.Update())
}
