package chat

import (
	"io"
	"strings"
)

// maxBlockBytes bounds one Markdown block held back for rendering: a
// longer one (an endless paragraph, an unclosed code fence) is written
// as it stands, so the answer keeps flowing and memory stays bounded.
const maxBlockBytes = 256 << 10

// MarkdownStream renders an answer that arrives in pieces: each block
// (a paragraph, a heading, a list, a code block) is rendered as soon as
// it is complete, at a blank line, a heading or a closing fence, and the
// rest when the answer ends (Flush).
type MarkdownStream struct {
	w      io.Writer
	width  func() int
	line   strings.Builder // the current, unfinished line
	block  []string        // the complete lines of the current block
	size   int
	fence  string // the open code fence's marker, "" outside one
	opener string // the open code fence's first line
	shown  bool   // a block of this answer was written
	render func(src string, width int) string
}

// NewMarkdownStream writes rendered blocks to w; width reports the
// terminal's current width.
func NewMarkdownStream(w io.Writer, width func() int) *MarkdownStream {
	return &MarkdownStream{w: w, width: width, render: RenderMarkdown}
}

// Write adds a piece of the answer.
func (m *MarkdownStream) Write(s string) {
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			m.line.WriteString(s)
			m.size += len(s)
			if m.size > maxBlockBytes {
				m.Flush()
			}
			return
		}
		m.line.WriteString(s[:i])
		s = s[i+1:]
		l := m.line.String()
		m.line.Reset()
		m.addLine(l)
	}
}

func (m *MarkdownStream) addLine(l string) {
	trimmed := strings.TrimLeft(l, " ")
	indent := len(l) - len(trimmed)
	switch {
	case m.fence != "":
		m.push(l)
		if indent < 4 && strings.HasPrefix(trimmed, m.fence) && strings.Trim(trimmed, m.fence[:1]+" \t") == "" {
			m.fence = ""
			m.emit()
		}
	case indent < 4 && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
		m.emit()
		c := trimmed[:1]
		m.fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, c))]
		m.opener = l
		m.push(l)
	case strings.TrimSpace(l) == "":
		m.emit()
	case indent < 4 && strings.HasPrefix(trimmed, "#"):
		m.emit()
		m.push(l)
		m.emit()
	default:
		m.push(l)
	}
	if m.size > maxBlockBytes {
		m.emit()
	}
}

func (m *MarkdownStream) push(l string) {
	m.block = append(m.block, l)
	m.size += len(l) + 1
}

// emit renders and writes the current block.
func (m *MarkdownStream) emit() {
	if len(m.block) == 0 {
		return
	}
	src := strings.Join(m.block, "\n") + "\n"
	if m.fence != "" {
		// An unclosed fence written early: close it so that it renders as
		// code; the rest of the code follows as another block.
		src += m.fence + "\n"
	}
	m.block, m.size = m.block[:0], m.line.Len()
	if m.fence != "" {
		m.push(m.opener) // the code goes on in the next block
	}
	out := m.render(src, m.width())
	if out == "" {
		return
	}
	if m.shown {
		io.WriteString(m.w, "\n")
	}
	io.WriteString(m.w, out)
	m.shown = true
}

// Flush renders what is left: the answer ended (or the agent is about to
// show something else, such as a tool call).
func (m *MarkdownStream) Flush() {
	if m.line.Len() > 0 {
		l := m.line.String()
		m.line.Reset()
		m.push(l)
	}
	m.emit()
	m.fence, m.block, m.size = "", m.block[:0], 0
}

// End finishes an answer: the next one starts without a blank line.
func (m *MarkdownStream) End() {
	m.Flush()
	m.shown = false
}
