package tool

import (
	"fmt"
	"strings"
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
			return nil, p.errorf(`expected "*** Add File: PATH", "*** Update File: PATH" or "*** Delete File: PATH", got %q`, cut(l, 80))
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
			return p.errorf(`every line of an added file starts with "+", got %q`, cut(l, 80))
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
			return p.errorf(`a hunk line starts with " " (context), "-" (removed) or "+" (added), got %q`, cut(l, 80))
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

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
