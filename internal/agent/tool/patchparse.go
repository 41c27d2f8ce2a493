package tool

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The apply_patch envelope, as codex's models are trained to write it
// (codex-rs/apply-patch; codex PR #2303):
//
//	*** Begin Patch
//	*** Add File: path          then "+" lines: the new file
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: other/path      (optional, renames)
//	@@ optional context line     then " " context, "-" removed, "+" added lines
//	*** End of File              (optional: the hunk ends the file)
//	*** End Patch
//
// Parsed here with codex's leniency: a shell wrapper around the envelope
// (<<'EOF' … EOF, cat <<'EOF' … EOF, apply_patch <<'EOF' … EOF: see
// unwrapShellPatch) is dropped, CRLF is read as LF, a file header may be
// indented, the first hunk of an update may omit its @@ line, and an empty
// line inside a hunk is an empty context line.

// Bounds of a patch: its size and how many files and lines it names.
const (
	maxPatchBytes = 4 << 20
	maxPatchFiles = 200
)

type patchKind int

const (
	patchAdd patchKind = iota
	patchDelete
	patchUpdate
)

// patchOp is one file of a patch.
type patchOp struct {
	kind   patchKind
	path   string
	moveTo string
	add    string // the content of an added file
	hunks  []hunk
	line   int // the header's line in the patch (1-based)
}

// hunk is one @@ section of an update.
type hunk struct {
	context  string // the text after "@@ ", a line to find first ("" for none)
	old, new []string
	// keep maps each line of new to the line of old it repeats (a context
	// line), or -1 for an added line: a context line is written back as
	// the file has it, bytes and line ending, whatever rung matched it.
	keep []int
	eof  bool // *** End of File: the hunk is at the end of the file
	line int  // its first line in the patch
}

// patchError is a patch that cannot be parsed, with the line at fault.
type patchError struct {
	line int
	msg  string
}

func (e *patchError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("invalid patch, line %d: %s", e.line, e.msg)
	}
	return "invalid patch: " + e.msg
}

// parsePatch parses the envelope.
func parsePatch(input string) ([]patchOp, error) {
	if len(input) > maxPatchBytes {
		return nil, &patchError{msg: fmt.Sprintf("the patch is over %d MiB; split it into several calls", maxPatchBytes>>20)}
	}
	input = strings.ReplaceAll(input, "\r\n", "\n")
	first := 0 // lines of the input before the envelope, for messages
	if body, line, ok := unwrapShellPatch(input); ok {
		input, first = body, line
	}
	lines := strings.Split(strings.TrimSpace(input), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "*** Begin Patch" {
		return nil, &patchError{line: first + 1, msg: `the first line must be "*** Begin Patch"`}
	}
	last := len(lines) - 1
	if last == 0 || strings.TrimSpace(lines[last]) != "*** End Patch" {
		return nil, &patchError{line: first + len(lines), msg: `the last line must be "*** End Patch" (the patch may be cut short)`}
	}
	p := &patchParser{lines: lines[1:last], base: first + 2}
	return p.parse()
}

type patchParser struct {
	lines []string
	base  int // patch line number of lines[0]
	i     int
}

func (p *patchParser) errorf(format string, args ...any) error {
	return &patchError{line: p.base + p.i, msg: fmt.Sprintf(format, args...)}
}

func header(l, prefix string) (string, bool) {
	if !strings.HasPrefix(l, prefix) {
		return "", false
	}
	return strings.TrimSpace(l[len(prefix):]), true
}

func (p *patchParser) parse() ([]patchOp, error) {
	var ops []patchOp
	for p.i < len(p.lines) {
		l := strings.TrimSpace(p.lines[p.i]) // codex takes an indented header (its scenario 017)
		if l == "" {
			p.i++
			continue
		}
		if len(ops) == maxPatchFiles {
			return nil, p.errorf("more than %d files in one patch; split it", maxPatchFiles)
		}
		op := patchOp{line: p.base + p.i}
		var ok bool
		switch {
		case strings.HasPrefix(l, "*** Add File:"):
			op.kind, op.path, ok = patchAdd, strings.TrimSpace(l[len("*** Add File:"):]), true
		case strings.HasPrefix(l, "*** Delete File:"):
			op.kind, op.path, ok = patchDelete, strings.TrimSpace(l[len("*** Delete File:"):]), true
		case strings.HasPrefix(l, "*** Update File:"):
			op.kind, op.path, ok = patchUpdate, strings.TrimSpace(l[len("*** Update File:"):]), true
		}
		if !ok {
			return nil, p.errorf(`expected "*** Add File: PATH", "*** Update File: PATH" or "*** Delete File: PATH", got %q`, clipLine(l, 80))
		}
		if op.path == "" {
			return nil, p.errorf("the file path is missing")
		}
		p.i++
		var err error
		switch op.kind {
		case patchAdd:
			err = p.addBody(&op)
		case patchUpdate:
			err = p.updateBody(&op)
		}
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, &patchError{msg: "the patch changes no file"}
	}
	return ops, nil
}

// atHeader: the line starts the next file. Inside an update only an
// unindented header does (" *** Add File: x" is a context line there, as
// in codex); after an added file's "+" lines an indented one does too.
func (p *patchParser) atHeader(indented bool) bool {
	l := p.lines[p.i]
	if indented {
		l = strings.TrimLeft(l, " \t")
	}
	return strings.HasPrefix(l, "*** Add File:") || strings.HasPrefix(l, "*** Delete File:") || strings.HasPrefix(l, "*** Update File:")
}

func (p *patchParser) addBody(op *patchOp) error {
	var b strings.Builder
	for ; p.i < len(p.lines) && !p.atHeader(true); p.i++ {
		l := p.lines[p.i]
		if !strings.HasPrefix(l, "+") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			return p.errorf(`every line of an added file starts with "+", got %q`, clipLine(l, 80))
		}
		b.WriteString(l[1:])
		b.WriteByte('\n')
	}
	op.add = b.String()
	return nil
}

func (p *patchParser) updateBody(op *patchOp) error {
	if p.i < len(p.lines) {
		if to, ok := header(p.lines[p.i], "*** Move to:"); ok {
			if to == "" {
				return p.errorf("the Move to path is missing")
			}
			op.moveTo = to
			p.i++
		}
	}
	var h *hunk
	for ; p.i < len(p.lines) && !p.atHeader(false); p.i++ {
		l := p.lines[p.i]
		switch {
		case l == "@@" || strings.HasPrefix(l, "@@ "):
			op.hunks = append(op.hunks, hunk{context: strings.TrimSpace(strings.TrimPrefix(l, "@@")), line: p.base + p.i})
			h = &op.hunks[len(op.hunks)-1]
			continue
		case strings.TrimSpace(l) == "*** End of File":
			if h == nil {
				return p.errorf(`"*** End of File" before any hunk line`)
			}
			h.eof = true
			continue
		}
		if h == nil { // the first hunk may omit its @@
			op.hunks = append(op.hunks, hunk{line: p.base + p.i})
			h = &op.hunks[len(op.hunks)-1]
		}
		if h.eof {
			return p.errorf(`a hunk line after "*** End of File"; start a new hunk with @@`)
		}
		switch {
		case l == "" || l[0] == ' ':
			h.old = append(h.old, strings.TrimPrefix(l, " "))
			h.new, h.keep = append(h.new, strings.TrimPrefix(l, " ")), append(h.keep, len(h.old)-1)
		case l[0] == '-':
			h.old = append(h.old, l[1:])
		case l[0] == '+':
			h.new, h.keep = append(h.new, l[1:]), append(h.keep, -1)
		default:
			return p.errorf(`a hunk line starts with " " (context), "-" (removed) or "+" (added), got %q`, clipLine(l, 80))
		}
	}
	if len(op.hunks) == 0 && op.moveTo == "" {
		return &patchError{line: op.line, msg: fmt.Sprintf("Update File %s has no hunks", op.path)}
	}
	for _, h := range op.hunks {
		if len(h.old) == 0 && len(h.new) == 0 {
			return &patchError{line: h.line, msg: "an empty hunk"}
		}
	}
	return nil
}

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
