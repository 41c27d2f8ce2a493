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
// Parsed here with codex's leniency: a heredoc wrapper (<<'EOF' … EOF)
// around the envelope is dropped, CRLF is read as LF, the first hunk of an
// update may omit its @@ line, and an empty line inside a hunk is an empty
// context line.

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
	eof      bool // *** End of File: the hunk is at the end of the file
	line     int  // its first line in the patch
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
	lines := strings.Split(strings.TrimSpace(input), "\n")
	first := 0 // index of the first line of lines in the input, for messages
	// A heredoc wrapper: <<'EOF' … EOF (GPT-4.1 sends these).
	if len(lines) >= 2 && strings.HasPrefix(strings.TrimSpace(lines[0]), "<<") {
		tag := strings.Trim(strings.TrimSpace(lines[0])[2:], `'" -`)
		if strings.TrimSpace(lines[len(lines)-1]) == tag {
			lines, first = lines[1:len(lines)-1], 1
		}
	}
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
		l := strings.TrimRight(p.lines[p.i], " \t")
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

func (p *patchParser) atHeader() bool {
	l := p.lines[p.i]
	return strings.HasPrefix(l, "*** Add File:") || strings.HasPrefix(l, "*** Delete File:") || strings.HasPrefix(l, "*** Update File:")
}

func (p *patchParser) addBody(op *patchOp) error {
	var b strings.Builder
	for ; p.i < len(p.lines) && !p.atHeader(); p.i++ {
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
	for ; p.i < len(p.lines) && !p.atHeader(); p.i++ {
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
		case l == "":
			h.old, h.new = append(h.old, ""), append(h.new, "")
		case l[0] == ' ':
			h.old, h.new = append(h.old, l[1:]), append(h.new, l[1:])
		case l[0] == '-':
			h.old = append(h.old, l[1:])
		case l[0] == '+':
			h.new = append(h.new, l[1:])
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
