package tool

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// lineMatcher finds a hunk's lines in a file through the rungs of the
// ladder in time linear in the file and the hunk: each rung's normalised
// lines are numbered once per file (equal lines, equal numbers), and a
// hunk is found among the numbers with Knuth-Morris-Pratt. Comparing line
// by line at every offset took minutes on a file of repeated lines. The
// work of one patch is bounded (maxMatchSteps) and stops when ctx is done.
type lineMatcher struct {
	ctx   context.Context
	lines []string
	rungs [len(patchRungs)]*rungIndex // built on first use
	steps int
}

// rungIndex is the file's lines under one rung, numbered.
type rungIndex struct {
	ids    []int
	number map[string]int
}

var patchRungs = [...]struct {
	how  string
	norm func(string) string
}{
	{"", func(s string) string { return s }},
	{"ignoring trailing whitespace", func(s string) string { return strings.TrimRight(s, " \t\r") }},
	{"normalising indentation", strings.TrimSpace},
	{"normalising quotes", func(s string) string { return curly.Replace(strings.TrimSpace(s)) }},
}

// maxMatchSteps bounds the line comparisons one patch may make (each
// hunk tried rung by rung from where the one before it ended): about a
// second of work; a patch that needs more is refused, to be split.
const maxMatchSteps = 100_000_000

// checkEvery is how many steps pass between looks at ctx and the bound.
const checkEvery = 1 << 14

// seek finds pat in the lines at or after start (at the end first when
// eof), trying the rungs in turn; how names the one that matched (""
// for exact). at is -1 when none does; err is set when ctx is done or the
// work bound is reached.
func (m *lineMatcher) seek(pat []string, start int, eof bool) (at int, how string, err error) {
	if len(pat) == 0 || len(pat) > len(m.lines) || start > len(m.lines)-len(pat) {
		return -1, "", nil
	}
	want := make([]int, len(pat))
	for r, rung := range patchRungs {
		idx, err := m.index(r)
		if err != nil {
			return -1, "", err
		}
		missing := false
		for k, l := range pat {
			id, ok := idx.number[rung.norm(l)]
			want[k], missing = id, missing || !ok
		}
		if missing { // a line no line of the file equals: no match here
			continue
		}
		if end := len(m.lines) - len(pat); eof && slices.Equal(idx.ids[end:], want) {
			return end, rung.how, nil
		}
		at, err := m.find(idx.ids, want, start)
		if err != nil || at >= 0 {
			return at, rung.how, err
		}
	}
	return -1, "", nil
}

func (m *lineMatcher) index(r int) (*rungIndex, error) {
	if idx := m.rungs[r]; idx != nil {
		return idx, nil
	}
	idx := &rungIndex{ids: make([]int, len(m.lines)), number: map[string]int{}}
	for i, l := range m.lines {
		if err := m.step(); err != nil {
			return nil, err
		}
		n := patchRungs[r].norm(l)
		id, ok := idx.number[n]
		if !ok {
			id = len(idx.number)
			idx.number[n] = id
		}
		idx.ids[i] = id
	}
	m.rungs[r] = idx
	return idx, nil
}

// find is the first index at or after start where want occurs in ids
// (Knuth-Morris-Pratt), or -1.
func (m *lineMatcher) find(ids, want []int, start int) (int, error) {
	fail := make([]int, len(want))
	for i, k := 1, 0; i < len(want); i++ {
		for k > 0 && want[i] != want[k] {
			k = fail[k-1]
		}
		if want[i] == want[k] {
			k++
		}
		fail[i] = k
	}
	k := 0
	for i := start; i < len(ids); i++ {
		if err := m.step(); err != nil {
			return -1, err
		}
		for k > 0 && ids[i] != want[k] {
			k = fail[k-1]
		}
		if ids[i] == want[k] {
			k++
		}
		if k == len(want) {
			return i - len(want) + 1, nil
		}
	}
	return -1, nil
}

// step counts one unit of work, and every checkEvery steps checks that
// the call is neither cancelled nor over its bound.
func (m *lineMatcher) step() error {
	m.steps++
	if m.steps&(checkEvery-1) != 0 {
		return nil
	}
	return m.check()
}

func (m *lineMatcher) check() error {
	if err := m.ctx.Err(); err != nil {
		return err
	}
	if m.steps > maxMatchSteps {
		return fmt.Errorf("matching the patch took over %d line comparisons; split it into smaller patches, each with a few hunks", maxMatchSteps)
	}
	return nil
}
