package tool

import (
	"context"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/crow-acp/crow-acp/acp"
)

// GPT and codex models send patches through the shell as codex runs them:
// `apply_patch <<'EOF' … EOF`, `apply_patch "*** Begin Patch…"`, or either
// inside `bash -lc "…"`. There is no apply_patch program; such a command
// line is caught before it runs and handled as the apply_patch tool, with
// the same checks and permission.

// shellPatch returns the patch a command line sends to apply_patch, if
// that is all the line does.
func shellPatch(line string) (string, bool) {
	if len(line) > maxPatchBytes || !strings.Contains(line, "apply_patch") && !strings.Contains(line, "applypatch") {
		return "", false
	}
	return shellPatchDepth(line, 0)
}

func shellPatchDepth(line string, depth int) (string, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) != 1 {
		return "", false
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 || st.Negated || st.Background {
		return "", false
	}
	args := make([]string, len(call.Args))
	for i, w := range call.Args {
		if args[i], ok = literal(w); !ok {
			return "", false
		}
	}
	switch prog := args[0]; {
	case prog == "apply_patch" || prog == "applypatch":
		if len(args) == 2 && len(st.Redirs) == 0 {
			return args[1], strings.Contains(args[1], "*** Begin Patch")
		}
		if len(args) == 1 && len(st.Redirs) == 1 {
			r := st.Redirs[0]
			if (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil {
				if body, ok := hdocBody(r); ok {
					return body, true
				}
			}
		}
	case depth == 0 && (prog == "bash" || prog == "sh" || prog == "zsh") && len(args) == 3 &&
		(args[1] == "-c" || args[1] == "-lc") && len(st.Redirs) == 0:
		return shellPatchDepth(args[2], depth+1)
	}
	return "", false
}

// hdocBody is a heredoc's text when the shell passes it on unchanged: a
// quoted delimiter (<<'EOF') keeps it verbatim; an unquoted one only when
// it has no expansions or backslashes.
func hdocBody(r *syntax.Redirect) (string, bool) {
	quoted := r.Word != nil && len(r.Word.Parts) > 0
	if quoted {
		_, lit := r.Word.Parts[0].(*syntax.Lit)
		quoted = !lit || len(r.Word.Parts) > 1
	}
	var b strings.Builder
	for _, part := range r.Hdoc.Parts {
		l, ok := part.(*syntax.Lit)
		if !ok || !quoted && strings.ContainsRune(l.Value, '\\') {
			return "", false
		}
		b.WriteString(l.Value)
	}
	return b.String(), true
}

// patchFromShell prepares a caught shell patch; its result says how it ran.
func patchFromShell(env *Env, input string) (*Action, error) {
	act, err := preparePatch(env, input)
	if err != nil {
		return nil, err
	}
	run := act.Run
	act.Run = func(ctx context.Context, progress func([]acp.ToolCallContent)) Result {
		r := run(ctx, progress)
		r.Output = "(apply_patch was run as crow's apply_patch tool, not in the shell.)\n" + r.Output
		return r
	}
	return act, nil
}
