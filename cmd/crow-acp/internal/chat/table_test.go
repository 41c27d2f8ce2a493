package chat

import (
	"strings"
	"testing"
	"time"
)

// TestRenderTable: a GFM pipe table is laid out in aligned columns (left,
// centre, right as its delimiter row says), its cells' Markdown rendered,
// with text around it rendered as usual; a table in a code block stays
// code.
func TestRenderTable(t *testing.T) {
	src := "Sizes:\n\n| Name | Kind | Size |\n|:-----|:----:|-----:|\n| `a.go` | file | 12 |\n| **dir** | d | 3 |\n| c\\|d |\n\nAfter.\n"
	out := RenderMarkdown(src, 80)
	plain := stripSGR(out)
	for _, want := range []string{
		"Sizes:\n\n",
		"Name │ Kind │ Size\n",
		"─────┼──────┼─────\n",
		"a.go │ file │   12\n",
		"dir  │  d   │    3\n",
		"c|d  │      │     \n",
		"\n\nAfter.\n",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("no %q in:\n%s", want, plain)
		}
	}
	if !strings.Contains(out, sgrCode+"a.go"+sgrReset) || !strings.Contains(out, sgrBold+"dir"+sgrReset) {
		t.Errorf("cell Markdown not rendered: %q", out)
	}
	if bad := unsafeLeft(out); bad != "" {
		t.Errorf("unsafe: %q", bad)
	}

	code := RenderMarkdown("```\n| a | b |\n|---|---|\n```\n", 80)
	if !strings.Contains(stripSGR(code), "|---|---|") {
		t.Errorf("a table in code was laid out: %q", code)
	}
	if got := stripSGR(RenderMarkdown("a | b\n-- | --\n1 | 2\n", 80)); got != "a │ b\n──┼──\n1 │ 2\n" {
		t.Errorf("a table without outer pipes: %q", got)
	}
	if got := stripSGR(RenderMarkdown("| a |\n|-|-|\n", 80)); strings.Contains(got, "│") {
		t.Errorf("a delimiter row that does not match the header is no table: %q", got)
	}
}

// TestRenderTableNarrow: a table wider than the terminal wraps its widest
// column, and no line is wider than the terminal.
func TestRenderTableNarrow(t *testing.T) {
	long := strings.Repeat("word ", 30)
	out := stripSGR(RenderMarkdown("| key | text |\n|---|---|\n| k | "+long+"|\n| 表 | 漢字 |\n", 40))
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if w := textWidth(l); w > 40 {
			t.Errorf("line %d columns wide: %q", w, l)
		}
	}
	if strings.Count(out, "word") != 30 {
		t.Errorf("words lost in wrapping:\n%s", out)
	}
	if !strings.Contains(out, "表  │ 漢字") {
		t.Errorf("wide characters not aligned:\n%s", out)
	}
}

// FuzzRenderTable: whatever tables a model writes, rendering leaves no
// escape but SGR and stays fast.
func FuzzRenderTable(f *testing.F) {
	for _, s := range []string{
		"| a | b |\n|---|:-:|\n| 1 | 2 |\n",
		"|\x1b[2J|\x1b]0;t\x07|\n|-|-|\n|\x9b|\u202e|\n",
		"a|b\n-|-\n\xff|\xfe\n",
		strings.Repeat("|", 200) + "\n" + strings.Repeat("-|", 100) + "\n",
		strings.Repeat("| a | b |\n|---|---|\n", 500),
		"```\n|a|\n|-|\n```\n| x |\n|---|\n",
	} {
		f.Add(s, 60)
	}
	f.Fuzz(func(t *testing.T, src string, width int) {
		if len(src) > maxBlockBytes {
			return
		}
		start := time.Now()
		out := RenderMarkdown(src, width%300)
		if bad := unsafeLeft(out); bad != "" {
			t.Fatalf("unsafe output at %q", bad)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%d bytes took %v", len(src), d)
		}
	})
}
