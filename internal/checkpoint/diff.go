package checkpoint

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Diff bounds: a skipped file's diff is shown for files up to maxDiffBytes
// and lines up to maxDiffLines each (the comparison is quadratic);
// larger, the report says only that they differ.
const (
	maxDiffBytes = 1 << 20
	maxDiffLines = 2000
	diffContext  = 3
)

// fileDiff is the unified diff from the file at abs (now) to want (what
// undo would write; wantExists false: the file would be removed), fit for
// a terminal.
func fileDiff(abs, name string, want []byte, wantExists bool) string {
	now, nowExists, err := readBounded(abs)
	if err != nil {
		return ""
	}
	if !wantExists {
		want = nil
	}
	return termsafe.Text(unifiedDiff(name, now, want, nowExists, wantExists))
}

func readBounded(p string) ([]byte, bool, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, true, fmt.Errorf("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxDiffBytes+1))
	return b, true, err
}

// unifiedDiff is a unified diff of a (now) and b (before the turn).
func unifiedDiff(name string, a, b []byte, aExists, bExists bool) string {
	from, to := "a/"+name+" (now)", "b/"+name+" (before the turn)"
	if !aExists {
		from = "/dev/null"
	}
	if !bExists {
		to = "/dev/null"
	}
	switch {
	case len(a) > maxDiffBytes || len(b) > maxDiffBytes:
		return fmt.Sprintf("files differ (%d and %d bytes: too large to show)\n", len(a), len(b))
	case bytes.IndexByte(a, 0) >= 0 || bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(a) || !utf8.Valid(b):
		return fmt.Sprintf("binary files differ (%d and %d bytes)\n", len(a), len(b))
	}
	al, bl := lines(a), lines(b)
	if len(al) > maxDiffLines || len(bl) > maxDiffLines {
		return fmt.Sprintf("files differ (%d and %d lines: too many to show)\n", len(al), len(bl))
	}
	ops := editScript(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	// Hunks: runs of changes with up to diffContext equal lines around.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		aStart, bStart, aN, bN := ops[start].a, ops[start].b, 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aN++
			}
			if o.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart+1, aN, bStart+1, bN)
		for _, o := range ops[start:end] {
			line := o.text
			out.WriteByte(o.kind)
			out.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

type op struct {
	kind byte // ' ', '-', '+'
	text string
	a, b int // line indexes before this op
}

// editScript is a shortest edit script of a into b (longest common
// subsequence, by dynamic programming: both are bounded by maxDiffLines).
func editScript(a, b []string) []op {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i, j})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', b[j], i, j})
			j++
		default:
			ops = append(ops, op{'-', a[i], i, j})
			i++
		}
	}
	return ops
}
