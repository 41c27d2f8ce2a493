package chat

import (
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// GFM pipe tables, found and laid out here rather than by goldmark's table
// extension: importing goldmark/extension runs its initialisers (and
// goldmark's own, a whole parser and HTML renderer) in every crow-acp
// process, serve included; measured 3.9 ms and 2,049 allocations at start.
//
// Bounds: a table's rows and columns, and a cell's bytes parsed as
// Markdown (a longer cell is shown as written).
const (
	maxTableRows      = 1000
	maxTableCols      = 64
	maxCellMarkdown   = 1 << 10
	minTableColWidth  = 3
	tableColumnMargin = 3 // " │ " between columns
)

type align byte

const (
	alignNone align = iota
	alignLeft
	alignCenter
	alignRight
)

// table is a pipe table's cells as written and its columns' alignment.
type table struct {
	header []string
	aligns []align
	rows   [][]string
}

// segment is a run of src: Markdown text, or a table.
type segment struct {
	text  string
	table *table
}

// splitTables cuts src into its pipe tables (outside fenced code) and the
// text around them, in one pass.
func splitTables(src string) []segment {
	lines := strings.SplitAfter(src, "\n")
	var out []segment
	from := 0 // the first line of the text not yet cut
	fence := ""
	for i := 1; i < len(lines); i++ {
		prev := strings.TrimRight(lines[i-1], "\r\n")
		if f := fenceMarker(prev); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence):
				fence = ""
			}
			continue
		}
		if fence != "" || i-1 < from {
			continue
		}
		aligns := delimiterRow(strings.TrimRight(lines[i], "\r\n"))
		if aligns == nil || !strings.Contains(prev, "|") {
			continue
		}
		header := tableCells(prev)
		if len(header) != len(aligns) || len(header) > maxTableCols {
			continue
		}
		t := &table{header: header, aligns: aligns}
		j := i + 1
		for ; j < len(lines) && len(t.rows) < maxTableRows; j++ {
			l := strings.TrimRight(lines[j], "\r\n")
			if strings.TrimSpace(l) == "" || !strings.Contains(l, "|") || fenceMarker(l) != "" {
				break
			}
			t.rows = append(t.rows, fit(tableCells(l), len(header)))
		}
		if i-1 > from {
			out = append(out, segment{text: strings.Join(lines[from:i-1], "")})
		}
		out = append(out, segment{table: t})
		from = j
		i = j // the next table's header is at j at the earliest
	}
	if out == nil {
		return nil
	}
	if from < len(lines) {
		out = append(out, segment{text: strings.Join(lines[from:], "")})
	}
	return out
}

// fenceMarker is the fence a line opens or closes (``` or ~~~ and more),
// or "".
func fenceMarker(l string) string {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	m := t[:len(t)-len(strings.TrimLeft(t, t[:1]))]
	if len(m) < 3 {
		return ""
	}
	return m
}

// delimiterRow reads a table's second line (|:--|--:|); nil if it is not
// one.
func delimiterRow(l string) []align {
	t := strings.TrimSpace(l)
	if t == "" || strings.Trim(t, "|:- \t") != "" || !strings.Contains(t, "-") {
		return nil
	}
	piped := strings.Contains(t, "|")
	cells := tableCells(t)
	if len(cells) > maxTableCols || (!piped && len(cells) < 2) {
		return nil
	}
	out := make([]align, len(cells))
	for i, c := range cells {
		c = strings.TrimSpace(c)
		core := strings.Trim(c, ":")
		if core == "" || strings.Trim(core, "-") != "" || len(c)-len(core) > 2 {
			return nil
		}
		left, right := strings.HasPrefix(c, ":"), strings.HasSuffix(c, ":")
		switch {
		case left && right:
			out[i] = alignCenter
		case right:
			out[i] = alignRight
		case left:
			out[i] = alignLeft
		}
	}
	return out
}

// tableCells splits a row at its unescaped pipes, without the outer ones.
func tableCells(l string) []string {
	t := strings.TrimSpace(l)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, `\|`) {
		t = t[:len(t)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '\\' && i+1 < len(t) && t[i+1] == '|':
			cur.WriteByte('|')
			i++
		case t[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			if len(cells) > maxTableCols {
				return cells
			}
		default:
			cur.WriteByte(t[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// fit makes a row as wide as the header: extra cells are dropped, missing
// ones are empty.
func fit(cells []string, n int) []string {
	if len(cells) > n {
		return cells[:n]
	}
	for len(cells) < n {
		cells = append(cells, "")
	}
	return cells
}

// renderTable lays a table out in columns for a terminal width wide: the
// cells' inline Markdown rendered, the header bold, columns aligned as the
// delimiter row says. When the table is wider than the terminal its widest
// columns shrink and their cells wrap (as plain text).
func renderTable(t *table, width int) string {
	n := len(t.header)
	all := append([][]string{t.header}, t.rows...)
	styled := make([][]string, len(all))
	plain := make([][]string, len(all))
	widths := make([]int, n)
	for r, row := range all {
		styled[r] = make([]string, n)
		plain[r] = make([]string, n)
		for c, cell := range row {
			styled[r][c] = renderCell(cell)
			plain[r][c] = stripSGR(styled[r][c])
			widths[c] = max(widths[c], textWidth(plain[r][c]))
		}
	}
	for c := range widths {
		widths[c] = max(widths[c], 1)
	}
	avail := max(n*minTableColWidth, width-1-(n-1)*tableColumnMargin)
	wrap := false
	for sum(widths) > avail {
		wrap = true
		w := 0
		for c := range widths {
			if widths[c] > widths[w] {
				w = c
			}
		}
		if widths[w] <= minTableColWidth {
			break
		}
		widths[w]--
	}
	var b strings.Builder
	for r := range all {
		cells := styled[r]
		if wrap {
			cells = plain[r]
		}
		writeRow(&b, cells, widths, t.aligns, wrap, r == 0)
		if r == 0 {
			for c, w := range widths {
				if c > 0 {
					b.WriteString("─┼─")
				}
				b.WriteString(strings.Repeat("─", w))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// writeRow writes one row; wrapped cells take as many lines as the
// longest needs.
func writeRow(b *strings.Builder, cells []string, widths []int, aligns []align, wrap, header bool) {
	parts := make([][]string, len(cells))
	height := 1
	for c, cell := range cells {
		if wrap {
			parts[c] = wrapText(cell, widths[c])
		} else {
			parts[c] = []string{cell}
		}
		height = max(height, len(parts[c]))
	}
	for line := 0; line < height; line++ {
		for c := range cells {
			if c > 0 {
				b.WriteString(" " + sgrDim + "│" + sgrReset + " ")
			}
			s := ""
			if line < len(parts[c]) {
				s = parts[c][line]
			}
			pad := max(0, widths[c]-textWidth(stripSGR(s)))
			if header {
				s = sgrBold + s + sgrReset
			}
			switch aligns[c] {
			case alignRight:
				b.WriteString(strings.Repeat(" ", pad) + s)
			case alignCenter:
				b.WriteString(strings.Repeat(" ", pad/2) + s + strings.Repeat(" ", pad-pad/2))
			default:
				b.WriteString(s + strings.Repeat(" ", pad))
			}
		}
		b.WriteString("\n")
	}
}

// renderCell renders a cell's inline Markdown; the text is made safe
// first.
func renderCell(cell string) string {
	safe := termsafe.Line(cell)
	if len(safe) > maxCellMarkdown {
		return safe
	}
	src := []byte(safe)
	doc := markdown().Parse(text.NewReader(src))
	r := &mdRenderer{src: src}
	var b strings.Builder
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		if _, ok := c.(*ast.Paragraph); ok {
			b.WriteString(r.inlines(c, ""))
		} else {
			return safe // a cell that parses as a heading, list or quote: as written
		}
	}
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// wrapText cuts s into lines of at most w columns, at spaces where it can.
func wrapText(s string, w int) []string {
	var out []string
	for textWidth(s) > w {
		cut, col := 0, 0
		lastSpace := -1
		for i, r := range s {
			rw := runeWidth(r)
			if col+rw > w {
				break
			}
			col += rw
			cut = i + utf8.RuneLen(r)
			if r == ' ' {
				lastSpace = i
			}
		}
		if lastSpace > 0 {
			cut = lastSpace
		}
		if cut == 0 {
			_, size := utf8.DecodeRuneInString(s)
			cut = size
		}
		out = append(out, strings.TrimRight(s[:cut], " "))
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(out, s)
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// textWidth is how many terminal columns s (without escapes) takes.
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is 2 for the wide East Asian and emoji ranges, 0 for combining
// marks, 1 otherwise: close enough to line up a table.
func runeWidth(r rune) int {
	switch {
	case r >= 0x300 && r <= 0x36f, r == 0x200d, r >= 0xfe00 && r <= 0xfe0f:
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf, r >= 0xac00 && r <= 0xd7a3,
		r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60,
		r >= 0xffe0 && r <= 0xffe6, r >= 0x1f300 && r <= 0x1faff, r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

// stripSGR is s without its SGR sequences.
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if n := sgrLen(s[i:]); n > 0 {
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}
