package chat

import (
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

func ptr[T any](v T) *T { return &v }

// TestChanges: /diff shows each file a completed tool call changed, from
// its text before the session's first edit to after its last, as unified
// diffs with correct hunk headers; refused or running calls count for
// nothing, and the model's text cannot act on the terminal.
func TestChanges(t *testing.T) {
	var c changes
	done := func(d acp.Diff) acp.SessionUpdate {
		return acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "x", Status: acp.ToolStatusCompleted,
			Content: []acp.ToolCallContent{{Diff: &d}}}}
	}
	lines := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString("line " + string(rune('a'+i-1)) + "\n")
		}
		return b.String()
	}
	orig := lines(12)
	first := strings.Replace(orig, "line b\n", "line B\n", 1)
	second := strings.Replace(first, "line k\n", "line K\nline K2\n", 1)
	c.observe(done(acp.Diff{Path: "/p/a.txt", OldText: ptr(orig), NewText: first}))
	c.observe(done(acp.Diff{Path: "/p/a.txt", OldText: ptr(first), NewText: second}))
	c.observe(acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "y", Status: acp.ToolStatusFailed,
		Content: []acp.ToolCallContent{{Diff: &acp.Diff{Path: "/p/refused.txt", NewText: "no"}}}}})
	c.observe(done(acp.Diff{Path: "/p/new\x1b[2J.txt", NewText: "fresh\n"}))
	c.observe(done(acp.Diff{Path: "/p/same.txt", OldText: ptr("x\n"), NewText: "y\n"}))
	c.observe(done(acp.Diff{Path: "/p/same.txt", OldText: ptr("y\n"), NewText: "x\n"}))

	got := c.render("/p", false)
	want := `--- a/a.txt
+++ b/a.txt
@@ -1,5 +1,5 @@
 line a
-line b
+line B
 line c
 line d
 line e
@@ -8,5 +8,6 @@
 line h
 line i
 line j
-line k
+line K
+line K2
 line l
--- /dev/null
+++ b/new^[[2J.txt
@@ -0,0 +1,1 @@
+fresh
same.txt: changed and changed back
`
	if got != want {
		t.Errorf("render:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "refused") {
		t.Error("a failed call's diff is shown")
	}
	if col := c.render("/p", true); !strings.Contains(col, "\x1b[31m-line b") || unsafeLeft(col) != "" {
		t.Errorf("colours: %q", col)
	}
	var empty changes
	if empty.render("/p", false) != "" {
		t.Error("no change renders something")
	}
}

// TestUnified: hunks far apart stay apart, near ones merge, and a huge
// rewrite is one hunk without a quadratic table.
func TestUnified(t *testing.T) {
	if got := strings.Join(unified([]string{"a", "b"}, []string{"a", "b"}), "\n"); got != "" {
		t.Errorf("no change: %q", got)
	}
	if got := strings.Join(unified(nil, []string{"x"}), "\n"); got != "@@ -0,0 +1,1 @@\n+x" {
		t.Errorf("new: %q", got)
	}
	if got := strings.Join(unified([]string{"x", "y"}, nil), "\n"); got != "@@ -1,2 +0,0 @@\n-x\n-y" {
		t.Errorf("deleted: %q", got)
	}
	a := make([]string, 3000)
	b := make([]string, 3000)
	for i := range a {
		a[i], b[i] = "old", "new"
	}
	h := unified(a, b)
	if len(h) != 6001 || h[0] != "@@ -1,3000 +1,3000 @@" {
		t.Errorf("rewrite: %d lines, %q", len(h), h[0])
	}
}
