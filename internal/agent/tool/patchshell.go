package tool

import (
	"context"
	"errors"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/crow-acp/crow-acp/acp"
)

// GPT and codex models send patches through the shell as codex runs them:
// `apply_patch <<'EOF' … EOF`, `apply_patch "*** Begin Patch…"`,
// `cat <<'EOF' | apply_patch`, or any of them inside `bash -lc "…"`. There
// is no apply_patch program; such a command line is caught before it runs
// and handled as the apply_patch tool, with the same checks and permission.
// The same wrappers around apply_patch's own input (and a bare
// `<<'EOF' … EOF` or `cat <<'EOF' … EOF`, opencode's test "parses
// heredoc-wrapped patch") are unwrapped by parsePatch. Both parse the line
// with mvdan.cc/sh, never by matching its text.

// shellPatch returns the patch a command line sends to apply_patch, if
// that is all the line does.
func shellPatch(line string) (string, bool) {
	if len(line) > maxPatchBytes || !strings.Contains(line, "apply_patch") && !strings.Contains(line, "applypatch") {
		return "", false
	}
	body, _, ok := patchOfLine(line, 0, false)
	return body, ok
}

// unwrapShellPatch takes the patch out of a shell wrapper sent as
// apply_patch's input: the patch and the 0-based line of input it starts
// on. Input that already starts with the envelope is left alone.
func unwrapShellPatch(input string) (string, int, bool) {
	if strings.HasPrefix(strings.TrimSpace(input), "*** Begin Patch") || !strings.Contains(input, "*** Begin Patch") {
		return "", 0, false
	}
	return patchOfLine(input, 0, true)
}

// patchOfLine reads one shell statement that only hands a patch to
// apply_patch: `apply_patch PATCH`, `apply_patch <<EOF`, `cat <<EOF |
// apply_patch`, or `bash -c`/`-lc` of one of these (once). asInput also
// takes what only makes sense as apply_patch's input (`<<EOF` alone, `cat
// <<EOF`) and a heredoc's text as written even where a shell would expand
// it: nothing runs it. at is the line the patch starts on (heredocs).
func patchOfLine(line string, depth int, asInput bool) (body string, at int, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) != 1 {
		return "", 0, false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || st.Disown {
		return "", 0, false
	}
	switch cmd := st.Cmd.(type) {
	case nil:
		if asInput && len(st.Redirs) == 1 {
			return heredocText(line, st.Redirs[0], asInput)
		}
	case *syntax.CallExpr:
		args, ok := literalArgs(cmd)
		if !ok {
			return "", 0, false
		}
		switch prog := args[0]; {
		case isApplyPatch(prog) && len(args) == 2 && len(st.Redirs) == 0:
			return args[1], 0, strings.Contains(args[1], "*** Begin Patch")
		case (isApplyPatch(prog) || asInput && prog == "cat") && len(args) == 1 && len(st.Redirs) == 1:
			return heredocText(line, st.Redirs[0], asInput)
		case depth == 0 && (prog == "bash" || prog == "sh" || prog == "zsh") && len(args) == 3 &&
			(args[1] == "-c" || args[1] == "-lc") && len(st.Redirs) == 0:
			body, _, ok := patchOfLine(args[2], depth+1, asInput)
			return body, 0, ok
		}
	case *syntax.BinaryCmd:
		// cat <<EOF … EOF | apply_patch
		if cmd.Op != syntax.Pipe || len(st.Redirs) > 0 || !plainStmt(cmd.X) || !plainStmt(cmd.Y) || len(cmd.X.Redirs) != 1 || len(cmd.Y.Redirs) != 0 {
			return "", 0, false
		}
		left, ok1 := cmd.X.Cmd.(*syntax.CallExpr)
		right, ok2 := cmd.Y.Cmd.(*syntax.CallExpr)
		if !ok1 || !ok2 {
			return "", 0, false
		}
		cat, ok1 := literalArgs(left)
		ap, ok2 := literalArgs(right)
		if ok1 && ok2 && len(cat) == 1 && cat[0] == "cat" && len(ap) == 1 && isApplyPatch(ap[0]) {
			return heredocText(line, cmd.X.Redirs[0], asInput)
		}
	}
	return "", 0, false
}

func isApplyPatch(prog string) bool { return prog == "apply_patch" || prog == "applypatch" }

func plainStmt(s *syntax.Stmt) bool {
	return s != nil && !s.Negated && !s.Background && !s.Coprocess && !s.Disown
}

// literalArgs are a simple command's words, each a plain literal; false
// when it sets variables or a word expands.
func literalArgs(call *syntax.CallExpr) ([]string, bool) {
	if len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	args := make([]string, len(call.Args))
	for i, w := range call.Args {
		var ok bool
		if args[i], ok = literal(w); !ok {
			return nil, false
		}
	}
	return args, true
}

// heredocText is the text a heredoc redirect feeds to its command, and
// the 0-based line it starts on. For a command line (asInput false) only
// when the shell passes it on unchanged: a quoted delimiter (<<'EOF')
// keeps it verbatim, an unquoted one only when it has no expansions or
// backslashes. As apply_patch's input it is the text as written.
func heredocText(src string, r *syntax.Redirect, asInput bool) (string, int, bool) {
	if (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc) || r.Hdoc == nil || len(r.Hdoc.Parts) == 0 {
		return "", 0, false
	}
	at := int(r.Hdoc.Pos().Line()) - 1
	if !asInput {
		body, ok := hdocBody(r)
		return body, at, ok
	}
	// The text as written up to the last part, then that part's value:
	// the body always ends in a literal newline, and the parser's end of
	// that literal lies past the closing delimiter.
	parts := r.Hdoc.Parts
	last, ok := parts[len(parts)-1].(*syntax.Lit)
	if !ok {
		return "", 0, false
	}
	from, to := int(parts[0].Pos().Offset()), int(last.Pos().Offset())
	if from > to || to > len(src) {
		return "", 0, false
	}
	body := src[from:to] + last.Value
	if r.Op == syntax.DashHdoc { // <<- drops each line's leading tabs
		lines := strings.Split(body, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimLeft(l, "\t")
		}
		body = strings.Join(lines, "\n")
	}
	return body, at, true
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
func patchFromShell(env *Env, input, workdir string) (*Action, error) {
	act, err := preparePatch(env, input, workdir)
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

// QuoteArgv is the shell line that runs argv exactly as given, for a
// command sent as an array: a word of plain characters stays as it is,
// any other is single-quoted (a quote in it written '"'"'), which POSIX
// sh and bash read back byte for byte and the rule matcher reads as
// literal text. It fails on a NUL byte, which no argument can hold.
func QuoteArgv(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("the command array is empty")
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errors.New("an argument holds a NUL byte")
		}
		words[i] = quoteWord(a)
	}
	return strings.Join(words, " "), nil
}

func quoteWord(s string) string {
	if s != "" && !syntax.IsKeyword(s) && strings.IndexFunc(s, needsQuote) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// needsQuote: a character the shell may read as more than itself (an
// operator, a quote, an expansion, a glob, whitespace, an assignment's =).
func needsQuote(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("_-./,:@%+", r)
}
