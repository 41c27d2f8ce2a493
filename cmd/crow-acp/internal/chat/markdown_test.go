package chat

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// sgrRE matches the SGR sequences the renderer may write.
var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// unsafeLeft reports what in rendered output, once its SGR sequences are
// removed, a terminal would act on: any control but newline and tab, C1
// controls, bidi and other invisible format characters, invalid UTF-8.
func unsafeLeft(out string) string {
	rest := sgrRE.ReplaceAllString(out, "")
	for i, r := range rest {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return rest[i:min(len(rest), i+20)]
		case r == utf8.RuneError:
			return rest[i:min(len(rest), i+20)]
		case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0xfeff:
			return rest[i:min(len(rest), i+20)]
		}
	}
	return ""
}

// TestRenderMarkdown: the blocks a model writes are rendered for a
// terminal, and nothing the model wrote can act on it: escape sequences,
// OSC (title, clipboard), bidi overrides, C1 controls and entities that
// decode to controls all stay visible and inert.
func TestRenderMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // substrings of the output
		not       []string
	}{
		{"heading", "# Title\n", []string{sgrBold + sgrUnderline + "Title" + sgrReset}, []string{"#"}},
		{"emphasis and code", "a **b** _c_ `d`\n", []string{sgrBold + "b" + sgrReset, sgrItalic + "c" + sgrReset, sgrCode + "d" + sgrReset}, []string{"**", "`"}},
		{"lists", "- one\n- two\n  1. x\n", []string{"• one\n", "• two\n", "  1. x\n"}, nil},
		{"code highlighted", "```go\nfunc main() {}\n```\n", []string{"func", "main"}, []string{"```"}},
		{"link", "[docs](https://example.com)\n", []string{sgrUnderline + "docs" + sgrReset, "(https://example.com)"}, nil},
		{"quote", "> said\n", []string{"│" + sgrReset + " said"}, nil},
		{"escape in text", "hi \x1b[2J\x1b]0;title\x07 there\n", []string{"^[[2J^[]0;title^G"}, []string{"\x1b[2J", "\x1b]"}},
		{"escape in code", "```sh\necho \x1b]52;c;cm0=\x07\n```\n", []string{"^[]52;c;cm0=^G"}, []string{"\x1b]"}},
		{"escape in heading", "# a\x1b[1Ab\n", []string{"a^[[1Ab"}, nil},
		{"bidi", "x \u202egnp.exe\n", []string{"<U+202E>gnp.exe"}, []string{"\u202e"}},
		{"C1 CSI", "x \u009b2J\n", []string{"<U+009B>2J"}, nil},
		{"entity", "a &#27;[2J &#x1b; &#155;\n", []string{"&#27;[2J"}, nil},
		{"link destination", "[x](http://e.com/\x1b]8;;)\n", nil, []string{"\x1b]"}},
		{"invalid UTF-8", "bad \xff\xfe byte\n", []string{"<0xFF><0xFE>"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := RenderMarkdown(tc.src, 80)
			if bad := unsafeLeft(out); bad != "" {
				t.Errorf("unsafe output at %q:\n%q", bad, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) && !strings.Contains(sgrRE.ReplaceAllString(out, ""), w) {
					t.Errorf("output lacks %q:\n%q", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("output has %q:\n%q", n, out)
				}
			}
		})
	}
}

// FuzzRenderMarkdown: whatever the model writes, the rendered output holds
// no escape but the renderer's SGR ones, and rendering stays bounded.
func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{
		"# h\n\n**b** `c`\n\n```go\nx := 1\n```\n",
		"\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\u202e",
		"```\n\x1b[31mred\n```",
		"&#27;&#x9b;&#0;",
		"> - [a](\x1b)\n>   ```\x00\n",
		"\xff\xfe\xc0\x80",
		strings.Repeat("- ", 5000) + "x",
		strings.Repeat("> ", 3000),
		strings.Repeat("`", 10000),
		strings.Repeat("[a](", 2000),
		"```python\n" + strings.Repeat("x = 1\n", 100) + "```\n",
		"~~~\n\x1b[2J\n~~~\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<16 {
			return
		}
		out := RenderMarkdown(src, 80)
		if bad := unsafeLeft(out); bad != "" {
			t.Fatalf("unsafe output at %q for %q", bad, src)
		}
		m := &MarkdownStream{w: &strings.Builder{}, width: func() int { return 80 }, render: RenderMarkdown}
		m.Write(src)
		m.End()
		if bad := unsafeLeft(m.w.(*strings.Builder).String()); bad != "" {
			t.Fatalf("unsafe streamed output at %q for %q", bad, src)
		}
	})
}

// TestMarkdownStreamRendersBlocksAsTheyEnd: a block is written as soon as
// it is complete (a blank line, a heading, a closing fence), not when the
// whole answer ends; what is left comes out at the end.
func TestMarkdownStreamRendersBlocksAsTheyEnd(t *testing.T) {
	var out strings.Builder
	m := &MarkdownStream{w: &out, width: func() int { return 80 }, render: func(src string, _ int) string { return "[" + src + "]" }}
	steps := []struct{ in, shown string }{
		{"First para", ""},
		{"graph goes on\n", ""},
		{"\n", "[First paragraph goes on\n]"},
		{"## Head", "[First paragraph goes on\n]"},
		{"ing\n", "[First paragraph goes on\n]\n[## Heading\n]"},
		{"```go\nx := 1\n\n", "[First paragraph goes on\n]\n[## Heading\n]"}, // a blank line inside a fence does not end it
		{"```\n", "[First paragraph goes on\n]\n[## Heading\n]\n[```go\nx := 1\n\n```\n]"},
		{"tail", "[First paragraph goes on\n]\n[## Heading\n]\n[```go\nx := 1\n\n```\n]"},
	}
	for _, s := range steps {
		m.Write(s.in)
		if out.String() != s.shown {
			t.Fatalf("after %q the terminal shows %q, want %q", s.in, out.String(), s.shown)
		}
	}
	m.End()
	if want := steps[len(steps)-1].shown + "\n[tail\n]"; out.String() != want {
		t.Fatalf("at the end %q, want %q", out.String(), want)
	}
}

// TestMarkdownStreamBounded: a block that never ends (an unclosed fence)
// is written once it grows past the bound, so memory stays bounded and
// the answer keeps flowing.
func TestMarkdownStreamBounded(t *testing.T) {
	var out strings.Builder
	n := 0
	m := &MarkdownStream{w: &out, width: func() int { return 80 }, render: func(src string, _ int) string { n++; return "x" }}
	m.Write("```\n")
	line := strings.Repeat("a", 1000) + "\n"
	for range 1000 {
		m.Write(line)
	}
	if n == 0 || m.size > maxBlockBytes+len(line)*2 {
		t.Fatalf("%d renders, %d bytes held back", n, m.size)
	}
	m.Write(strings.Repeat("b", 2*maxBlockBytes)) // one endless line
	if m.line.Len() > maxBlockBytes {
		t.Fatalf("%d bytes of one line held back", m.line.Len())
	}
}

// TestRenderMarkdownBoundsTheParse: goldmark's parse time grows with the
// square of the nesting and of some runs of brackets (measured: 32k nested
// quotes 3 s, 32k of "[a](" 0.9 s), so deep or large blocks are shown as
// written, and a lone code block is highlighted without a Markdown parse.
func TestRenderMarkdownBoundsTheParse(t *testing.T) {
	for name, src := range map[string]string{
		"nested quotes": strings.Repeat("> ", 16000),
		"nested lists":  strings.Repeat("1. ", 10000),
		"mixed nesting": strings.Repeat("> - ", 8000),
		"brackets":      strings.Repeat("[a](", 8000),
	} {
		if out := RenderMarkdown(src, 80); out != src {
			t.Errorf("%s: rendered as Markdown (%d bytes), want shown as written", name, len(out))
		}
	}
	code := "```go\n" + strings.Repeat("x := `a`\n", 2000) + "```\n"
	if out := RenderMarkdown(code, 80); strings.Contains(out, "```") || !strings.Contains(out, "x") {
		t.Errorf("a large code block is not rendered as code: %q", out[:200])
	}
}
