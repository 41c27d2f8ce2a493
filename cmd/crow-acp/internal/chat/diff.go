package chat

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Bounds of what /diff keeps and shows: the text kept of the files a
// session changed (past it, a file is listed as changed without its diff),
// the lines one /diff prints, and the size of the line table the diff
// computes (past it, a file's change is one hunk from its first changed
// line to its last).
const (
	maxDiffKept   = 8 << 20
	maxDiffShown  = 2000
	maxDiffCells  = 1 << 20
	diffContextLn = 3
)

// changes are the files a session's tool calls changed, from the diffs
// the agent sent with them (ACP diff content): each file's text before its
// first change and after its last, in the order first changed.
type changes struct {
	order []string
	files map[string]*fileChange
	size  int
}

type fileChange struct {
	before  *string // nil: the session created it
	after   string
	tooBig  bool
	changes int
}

// add records a diff of a tool call that completed.
func (c *changes) add(d *acp.Diff) {
	if c.files == nil {
		c.files = map[string]*fileChange{}
	}
	f := c.files[d.Path]
	if f == nil {
		f = &fileChange{before: d.OldText}
		c.files[d.Path] = f
		c.order = append(c.order, d.Path)
		if d.OldText != nil {
			c.size += len(*d.OldText)
		}
	}
	f.changes++
	c.size += len(d.NewText) - len(f.after)
	f.after = d.NewText
	if c.size > maxDiffKept {
		f.tooBig = true
		c.size -= len(f.after)
		f.after = ""
		if f.before != nil {
			c.size -= len(*f.before)
			f.before = nil
		}
	}
}

// observe records the diffs of a completed tool call.
func (c *changes) observe(u acp.SessionUpdate) {
	var status acp.ToolCallStatus
	var content []acp.ToolCallContent
	switch {
	case u.ToolCall != nil:
		status, content = u.ToolCall.Status, u.ToolCall.Content
	case u.ToolCallUpdate != nil:
		status, content = u.ToolCallUpdate.Status, u.ToolCallUpdate.Content
	default:
		return
	}
	if status != acp.ToolStatusCompleted {
		return
	}
	for _, tc := range content {
		if tc.Diff != nil {
			c.add(tc.Diff)
		}
	}
}

// render is the session's changes as unified diffs, paths relative to
// cwd, every line safe to print; colour adds red and green.
func (c *changes) render(cwd string, colour bool) string {
	if len(c.order) == 0 {
		return ""
	}
	var lines []string
	for _, p := range c.order {
		f := c.files[p]
		name := p
		if r, err := filepath.Rel(cwd, p); err == nil && !strings.HasPrefix(r, "..") {
			name = filepath.ToSlash(r)
		}
		name = termsafe.Line(name)
		if f.tooBig {
			lines = append(lines, fmt.Sprintf("%s: changed (%d edits), too large to keep its diff", name, f.changes))
			continue
		}
		before := ""
		from := "a/" + name
		if f.before == nil {
			from = "/dev/null"
		} else {
			before = *f.before
		}
		hunks := unified(splitText(before), splitText(f.after))
		if len(hunks) == 0 {
			lines = append(lines, name+": changed and changed back")
			continue
		}
		lines = append(lines, "--- "+from, "+++ b/"+name)
		lines = append(lines, hunks...)
	}
	var b strings.Builder
	for i, l := range lines {
		if i == maxDiffShown {
			fmt.Fprintf(&b, "… %d more lines not shown\n", len(lines)-maxDiffShown)
			break
		}
		l = termsafe.Line(l)
		if colour {
			switch {
			case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
				l = sgrBold + l + sgrReset
			case strings.HasPrefix(l, "@@"):
				l = "\x1b[36m" + l + sgrReset
			case strings.HasPrefix(l, "+"):
				l = "\x1b[32m" + l + sgrReset
			case strings.HasPrefix(l, "-"):
				l = "\x1b[31m" + l + sgrReset
			}
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// splitText is text's lines, without the empty one after a final newline.
func splitText(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// unified is the hunks (with their @@ headers) turning a into b: the
// lines both share at the start and end are set aside, the middle is
// diffed by longest common subsequence when its table is small enough,
// else taken as one change.
func unified(a, b []string) []string {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	if pre == len(a) && pre == len(b) {
		return nil
	}
	// ops: ' ' kept, '-' removed, '+' added, over the whole files.
	type op struct {
		kind byte
		text string
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if (len(ma)+1)*(len(mb)+1) <= maxDiffCells {
		// lcs[i][j]: the common subsequence of ma[i:] and mb[j:].
		w := len(mb) + 1
		lcs := make([]int32, (len(ma)+1)*w)
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
				} else {
					lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, op{' ', ma[i]})
				i, j = i+1, j+1
			case i < len(ma) && (j == len(mb) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
				ops = append(ops, op{'-', ma[i]}) // removals first, as diff(1) shows them
				i++
			default:
				ops = append(ops, op{'+', mb[j]})
				j++
			}
		}
	} else {
		for _, l := range ma {
			ops = append(ops, op{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, op{'+', l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}

	// Group the changes with diffContextLn lines around each into hunks.
	var out []string
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-diffContextLn)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContextLn {
				end = min(len(ops), end+diffContextLn)
				break
			}
			end = run
		}
		oldStart, newStart := 1, 1
		for _, o := range ops[:start] {
			if o.kind != '+' {
				oldStart++
			}
			if o.kind != '-' {
				newStart++
			}
		}
		oldN, newN := 0, 0
		var body []string
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				oldN++
			}
			if o.kind != '-' {
				newN++
			}
			body = append(body, string(o.kind)+o.text)
		}
		if oldN == 0 {
			oldStart--
		}
		if newN == 0 {
			newStart--
		}
		out = append(out, fmt.Sprintf("@@ -%d,%d +%d,%d @@", oldStart, oldN, newStart, newN))
		out = append(out, body...)
		k = end
	}
	return out
}
