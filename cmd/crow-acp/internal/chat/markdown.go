// Package chat is `crow-acp chat`: an interactive terminal conversation
// with the agent, driven over the same ACP client connection as exec.
package chat

import (
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"

	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// SGR sequences the renderer writes. Only these (and the highlighter's
// colours, highlight.go) ever reach the terminal; the model's text is made
// safe with termsafe before it is parsed.
const (
	sgrReset     = "\x1b[0m"
	sgrBold      = "\x1b[1m"
	sgrDim       = "\x1b[2m"
	sgrItalic    = "\x1b[3m"
	sgrUnderline = "\x1b[4m"
	sgrCode      = "\x1b[36m"
)

// markdown is goldmark's CommonMark parser (goldmark.DefaultParser); no
// raw HTML is ever interpreted here. Built on first use: serve, which links
// this package, never renders Markdown. goldmark's root package is not
// imported: its initialiser builds a whole parser and HTML renderer at
// every start.
var markdown = sync.OnceValue(func() parser.Parser {
	return parser.NewParser(parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(parser.DefaultInlineParsers()...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...))
})

// maxMarkdownBytes and maxNesting bound what is parsed as Markdown; a
// larger or deeper block is shown as plain text. Measured: 16k nested
// quotes take goldmark 0.9 s, 32 take 60 µs.
const (
	maxMarkdownBytes = 8 << 10 // measured: 8k of "[a](" take goldmark 60 ms, 32k 0.9 s
	maxCodeBytes     = 64 << 10
	maxNesting       = 32
)

// fencedOnly recognises a block that is one fenced code block and
// nothing else: its language and its code.
func fencedOnly(src string) (lang, code string, ok bool) {
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	if len(lines) < 2 {
		return "", "", false
	}
	open := strings.TrimLeft(lines[0], " ")
	if len(lines[0])-len(open) > 3 || !(strings.HasPrefix(open, "```") || strings.HasPrefix(open, "~~~")) {
		return "", "", false
	}
	marker := open[:len(open)-len(strings.TrimLeft(open, open[:1]))]
	info := strings.TrimSpace(open[len(marker):])
	if marker[0] == '`' && strings.Contains(info, "`") {
		return "", "", false
	}
	last := strings.TrimSpace(lines[len(lines)-1])
	if !strings.HasPrefix(last, marker) || strings.Trim(last, marker[:1]) != "" {
		return "", "", false
	}
	for _, l := range lines[1 : len(lines)-1] {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == "" {
			return "", "", false // closed early: more than one block
		}
	}
	lang, _, _ = strings.Cut(info, " ")
	return lang, strings.Join(lines[1:len(lines)-1], "\n"), true
}

// tooDeep reports whether a line of src opens more than maxNesting
// containers (quotes, list items) at its start.
func tooDeep(src string) bool {
	for _, line := range strings.Split(src, "\n") {
		depth := 0
		for i := 0; i < len(line); {
			c := line[i]
			switch {
			case c == ' ' || c == '\t':
				i++
				continue
			case c == '>':
				i++
			case (c == '-' || c == '*' || c == '+') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t'):
				i += 2
			case c >= '0' && c <= '9':
				j := i
				for j < len(line) && line[j] >= '0' && line[j] <= '9' {
					j++
				}
				if j+1 >= len(line) || (line[j] != '.' && line[j] != ')') || (line[j+1] != ' ' && line[j+1] != '\t') {
					i = len(line)
					continue
				}
				i = j + 2
			default:
				i = len(line)
				continue
			}
			if depth++; depth > maxNesting {
				return true
			}
		}
	}
	return false
}

// maxHighlightBytes bounds what one code block costs to highlight: a
// larger block is shown without colours.
const maxHighlightBytes = 16 << 10

// RenderMarkdown renders one or more complete Markdown blocks for a
// colour terminal of the given width: headings, emphasis, lists, quotes
// and code blocks with syntax highlighting. src is untrusted: it passes
// termsafe first, so the result holds no escape sequence but the
// renderer's own SGR ones.
func RenderMarkdown(src string, width int) string {
	if lang, code, ok := fencedOnly(src); ok && len(src) <= maxCodeBytes {
		// A code block alone (how the stream hands them over) needs no
		// Markdown parse: it is highlighted as it stands.
		r := &mdRenderer{width: width}
		r.code("", termsafe.Text(lang), termsafe.Text(code))
		return keepSGR(r.out.String())
	}
	if segs := splitTables(src); segs != nil {
		// Tables are laid out here; the text around them renders as usual
		// (it holds no table, so this recurses once).
		var parts []string
		for _, sg := range segs {
			switch {
			case sg.table != nil:
				parts = append(parts, strings.TrimRight(keepSGR(renderTable(sg.table, width)), "\n"))
			case strings.TrimSpace(sg.text) != "":
				parts = append(parts, strings.TrimRight(RenderMarkdown(sg.text, width), "\n"))
			}
		}
		return strings.Join(parts, "\n\n") + "\n"
	}
	if len(src) > maxMarkdownBytes || tooDeep(src) {
		// goldmark's parse time grows with the square of the nesting: a
		// block that could make it slow is shown as it was written.
		return termsafe.Text(src)
	}
	safe := []byte(termsafe.Text(src))
	doc := markdown().Parse(text.NewReader(safe))
	r := &mdRenderer{src: safe, width: max(20, min(width, 100))}
	r.block(doc, "")
	// Belt and braces: the source was made safe, so this changes nothing
	// unless a parser or highlighter produced a control of its own.
	return keepSGR(r.out.String())
}

type mdRenderer struct {
	src   []byte
	width int
	out   strings.Builder
	gap   bool // a block was written: the next one starts after a blank line
	depth int  // nesting of lists and quotes
}

// maxIndentDepth bounds the indentation of nested lists and quotes: deeper
// ones are shown at this depth, so that output stays linear in the input.
const maxIndentDepth = 8

// line writes a finished line with the block's indentation; every piece
// of it is already safe.
func (r *mdRenderer) lines(indent, firstIndent, s string) {
	for i, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if i == 0 {
			r.out.WriteString(firstIndent)
		} else {
			r.out.WriteString(indent)
		}
		r.out.WriteString(l)
		r.out.WriteString("\n")
	}
}

func (r *mdRenderer) sep(indent string) {
	if r.gap {
		r.out.WriteString(strings.TrimRight(indent, " ") + "\n")
	}
	r.gap = true
}

func (r *mdRenderer) block(n ast.Node, indent string) {
	r.blockFirst(n, indent, indent)
}

// blockFirst renders block n; its first line starts with first (a list
// marker), the others with indent.
func (r *mdRenderer) blockFirst(n ast.Node, indent, first string) {
	switch n := n.(type) {
	case *ast.Document:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			r.block(c, indent)
		}
	case *ast.Heading:
		r.sep(indent)
		style := sgrBold
		if n.Level == 1 {
			style += sgrUnderline
		}
		r.lines(indent, first, style+r.inlines(n, style)+sgrReset)
	case *ast.Paragraph, *ast.TextBlock:
		if _, tight := n.(*ast.TextBlock); !tight {
			r.sep(indent)
		}
		r.lines(indent, first, r.inlines(n, ""))
	case *ast.ThematicBreak:
		r.sep(indent)
		r.lines(indent, first, sgrDim+strings.Repeat("─", min(r.width, 40))+sgrReset)
	case *ast.Blockquote:
		quote := indent
		if r.depth < maxIndentDepth {
			quote += sgrDim + "│" + sgrReset + " "
		}
		r.depth++
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			r.blockFirst(c, quote, quote)
		}
		r.depth--
	case *ast.List:
		r.sep(indent)
		r.depth++
		defer func() { r.depth-- }()
		num := n.Start
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			marker := "• "
			if n.IsOrdered() {
				marker = strconv.Itoa(num) + ". "
				num++
			}
			sub := indent
			if r.depth < maxIndentDepth {
				sub += strings.Repeat(" ", len([]rune(marker)))
			}
			r.gap = false
			for i, cc := 0, c.FirstChild(); cc != nil; i, cc = i+1, cc.NextSibling() {
				f := sub
				if i == 0 {
					f = indent + marker
				}
				r.blockFirst(cc, sub, f)
			}
			if c.FirstChild() == nil {
				r.lines(sub, indent+marker, "")
			}
		}
		r.gap = true
	case *ast.FencedCodeBlock:
		r.sep(indent)
		r.code(indent, string(n.Language(r.src)), r.raw(n))
	case *ast.CodeBlock:
		r.sep(indent)
		r.code(indent, "", r.raw(n))
	case *ast.HTMLBlock:
		r.sep(indent)
		raw := r.raw(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(r.src))
		}
		r.lines(indent, first, raw)
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			r.block(c, indent)
		}
	}
}

// raw is a block's source lines, as written.
func (r *mdRenderer) raw(n ast.Node) string {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// code writes a code block, highlighted when its language is known (or
// recognisable) and it is not huge.
func (r *mdRenderer) code(indent, lang, code string) {
	code = strings.TrimRight(code, "\n")
	var out string
	if len(code) <= maxHighlightBytes {
		out = highlight(lang, code)
	}
	if out == "" {
		out = sgrCode + strings.ReplaceAll(code, "\n", sgrReset+"\n"+sgrCode) + sgrReset
	}
	r.lines(indent+"  ", indent+"  ", out)
}

// inlines renders the inline content of a block; style is the block's
// own SGR, restored after each inline style ends.
func (r *mdRenderer) inlines(n ast.Node, style string) string {
	var b strings.Builder
	var walk func(n ast.Node, style string)
	walk = func(n ast.Node, style string) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Segment.Value(r.src))
				switch {
				case c.HardLineBreak(), c.SoftLineBreak():
					b.WriteString("\n")
				}
			case *ast.String:
				b.Write(c.Value)
			case *ast.CodeSpan:
				b.WriteString(sgrCode)
				walk(c, sgrCode)
				b.WriteString(sgrReset + style)
			case *ast.Emphasis:
				s := sgrItalic
				if c.Level >= 2 {
					s = sgrBold
				}
				b.WriteString(s)
				walk(c, style+s)
				b.WriteString(sgrReset + style)
			case *ast.Link:
				b.WriteString(sgrUnderline)
				walk(c, style+sgrUnderline)
				b.WriteString(sgrReset + style)
				if dest := string(c.Destination); dest != "" {
					b.WriteString(sgrDim + " (" + dest + ")" + sgrReset + style)
				}
			case *ast.AutoLink:
				b.WriteString(sgrUnderline + string(c.URL(r.src)) + sgrReset + style)
			case *ast.Image:
				b.WriteString("[image: ")
				walk(c, style)
				b.WriteString("] (" + string(c.Destination) + ")")
			case *ast.RawHTML:
				for i := 0; i < c.Segments.Len(); i++ {
					seg := c.Segments.At(i)
					b.Write(seg.Value(r.src))
				}
			default:
				walk(c, style)
			}
		}
	}
	walk(n, style)
	return b.String()
}

// keepSGR makes s safe for the terminal while keeping its SGR sequences
// (ESC [ digits and semicolons m): any other escape is made visible.
func keepSGR(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexByte(s, 0x1b)
		if i < 0 {
			b.WriteString(termsafe.Text(s))
			break
		}
		b.WriteString(termsafe.Text(s[:i]))
		s = s[i:]
		if n := sgrLen(s); n > 0 {
			b.WriteString(s[:n])
			s = s[n:]
			continue
		}
		b.WriteString(termsafe.Text(s[:1]))
		s = s[1:]
	}
	return b.String()
}

// sgrLen is the length of the SGR sequence s starts with, or 0.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s) && i < 64; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == ';':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}
