package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/agent/tool"
	"github.com/crow-acp/crow-acp/persistence"
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
			keys = append(keys, act.PermissionKey)
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
func (a *Agent) authorize(ctx context.Context, s *persistence.Session, call *acp.ToolCall, act *tool.Action) (v verdict, why string, err error) {
	mode := a.sessionMode(ctx, s.ID)
	if mode == ModePlan && (act.Access == tool.AccessEdit || act.Access == tool.AccessExecute || act.Access == tool.AccessOther) {
		return verdictRejected, "refused: the session is in read-only planning mode, where edits, commands and MCP tools are disabled. Finish the plan; the user can switch modes to carry it out.", nil
	}
	keys := permissionKeys(mode, act)
	if len(keys) == 0 {
		return verdictAllowed, "", nil
	}
	rules, err := a.store.PermissionRules(ctx, s.Cwd)
	if err != nil {
		if ctx.Err() != nil {
			return verdictCancelled, "", nil
		}
		return 0, "", storeError("read permission rules", err)
	}
	stored := make(map[string]bool, len(rules))
	for _, r := range rules {
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
	if !asking {
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
	req := &acp.RequestPermissionRequest{
		SessionID: s.ID,
		ToolCall: acp.ToolCallUpdate{ToolCallID: call.ToolCallID, Title: call.Title, Kind: call.Kind,
			Status: acp.ToolStatusPending, Content: content, Locations: call.Locations, RawInput: call.RawInput},
		Options: []acp.PermissionOption{
			{OptionID: optAllowOnce, Name: "Allow", Kind: acp.PermissionAllowOnce},
			{OptionID: optAllowAlways, Name: "Always allow " + describeKeys(keys), Kind: acp.PermissionAllowAlways},
			{OptionID: optRejectOnce, Name: "Reject", Kind: acp.PermissionRejectOnce},
			{OptionID: optRejectAlways, Name: "Always reject " + describeKey(keys[len(keys)-1]), Kind: acp.PermissionRejectAlways},
		},
	}
	res, err := a.client.RequestPermission(ctx, req)
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return verdictCancelled, "", nil
	}
	if err != nil {
		// Without an answer nothing risky runs.
		a.log.Warn("permission request failed", zap.String("session", s.ID), zap.Error(err))
		return verdictRejected, fmt.Sprintf("rejected: permission could not be obtained (%v).", err), nil
	}
	if res.Outcome.Outcome == "cancelled" {
		return verdictCancelled, "", nil
	}
	save := func(allow bool, keys ...string) error {
		for _, k := range keys {
			r := &persistence.PermissionRule{Cwd: s.Cwd, Key: k, Allow: allow}
			if err := a.store.SetPermissionRule(context.WithoutCancel(ctx), r); err != nil {
				return storeError("save permission rule", err)
			}
		}
		return nil
	}
	switch res.Outcome.OptionID {
	case optAllowOnce:
		return verdictAllowed, "", nil
	case optAllowAlways:
		return verdictAllowed, "", save(true, keys...)
	case optRejectAlways:
		// Only the most specific key: rejecting one outside path must not
		// reject every edit.
		return verdictRejected, "rejected by the user (always).", save(false, keys[len(keys)-1])
	case optRejectOnce:
		return verdictRejected, "rejected by the user.", nil
	default:
		return verdictRejected, fmt.Sprintf("rejected: the client answered with an unknown option %q.", res.Outcome.OptionID), nil
	}
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

func describeKeys(keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = describeKey(k)
	}
	return strings.Join(parts, " and ")
}
