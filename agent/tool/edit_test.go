package tool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runEdit writes file, runs edit_file with args on it and returns the
// result text, the file afterwards and whether the call failed.
func runEdit(t *testing.T, file string, args map[string]any) (string, string, bool) {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	args["path"] = "f.txt"
	env := &Env{Roots: ResolveRoots([]string{root})}
	act := prepare(t, editFile{}, env, args)
	ctx := context.Background()
	shown, perr := act.Preview(ctx)
	res := act.Run(ctx, nil)
	b, _ := os.ReadFile(filepath.Join(root, "f.txt"))
	if perr == nil && (len(shown) != 1 || shown[0].Diff == nil || shown[0].Diff.NewText != string(b)) {
		t.Fatalf("the preview showed %+v, the file holds %q", shown, b)
	}
	if (perr != nil) != res.Failed {
		t.Fatalf("preview error %v, run failed %v", perr, res.Failed)
	}
	return res.Output, string(b), res.Failed
}

// Each rung of the ladder, with the old parameter names: all of these
// failed when edit_file matched exact text only.
func TestEditLadder(t *testing.T) {
	for _, c := range []struct {
		name, file, old, new, want, how string
	}{
		{"crlf file, lf text", "a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\n", "x\r\ny\r\nc\r\n", "line endings"},
		{"lf file, crlf text", "a\nb\nc\n", "a\r\nb", "x\r\ny", "x\ny\nc\n", "line endings"},
		{"trailing whitespace in file", "func f() {  \n\treturn 1\t\n}\n", "func f() {\n\treturn 1\n}", "func f() {\n\treturn 2\n}", "func f() {\n\treturn 2\n}\n", "trailing whitespace"},
		{"spaces for tabs", "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n", "    if x {\n        return 1\n    }", "    if x {\n        return 2\n    }\n    return 3", "func f() {\n\tif x {\n\t\treturn 2\n\t}\n\treturn 3\n}\n", "indentation"},
		{"shifted indentation", "class A:\n    def f(self):\n        return 1\n", "def f(self):\n    return 1", "def f(self):\n    x = 1\n    return x", "class A:\n    def f(self):\n        x = 1\n        return x\n", "indentation"},
		{"typographic quotes", "say(\"hi\")\n", "say(“hi”)", "say(\"hello\")", "say(\"hello\")\n", "quotes"},
		{"line numbers copied from a read", "one\ntwo\nthree\n", "  2\ttwo\n  3\tthree", "  2\tTWO\n  3\tthree", "one\nTWO\nthree\n", "line-number prefixes"},
		{"pipe line numbers", "one\ntwo\n", "1|one\n2|two", "uno\ndos", "uno\ndos\n", "line-number prefixes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, got, failed := runEdit(t, c.file, map[string]any{"old": c.old, "new": c.new})
			if failed || got != c.want {
				t.Fatalf("file %q, want %q (failed %v: %s)", got, c.want, failed, out)
			}
			if !strings.Contains(out, "Not an exact match") || !strings.Contains(out, c.how) {
				t.Fatalf("result %q does not say it matched after %s", out, c.how)
			}
		})
	}
}

// A tolerant rung never picks one of several places.
func TestEditLadderNeedsUniqueMatch(t *testing.T) {
	out, got, failed := runEdit(t, "\tx()\n\ty()\n\tx()\n", map[string]any{"old_string": "  x()", "new_string": "  z()"})
	if !failed || got != "\tx()\n\ty()\n\tx()\n" || !strings.Contains(out, "matches 2 places") {
		t.Fatalf("failed %v, file %q: %s", failed, got, out)
	}
	out, _, failed = runEdit(t, "a\na\n", map[string]any{"old_string": "a", "new_string": "b"})
	if !failed || !strings.Contains(out, "matches 2 places") || !strings.Contains(out, "replace_all") {
		t.Fatalf("failed %v: %s", failed, out)
	}
}

func TestEditParameterNames(t *testing.T) {
	out, got, failed := runEdit(t, "a\na\n", map[string]any{"file_path": "ignored", "old_string": "a", "new_string": "b", "replace_all": true})
	if failed || got != "b\nb\n" {
		t.Fatalf("failed %v, file %q: %s", failed, got, out)
	}
}

// A failure shows the nearest real lines with visible whitespace.
func TestEditFailureShowsNearestLines(t *testing.T) {
	file := "package p\n\nfunc add(a, b int) int {\n\treturn a + b  \n}\n\nfunc other() {}\n"
	out, _, failed := runEdit(t, file, map[string]any{"old_string": "func add(a, b int) int {\n\treturn a - b\n}", "new_string": "x"})
	if !failed || !strings.Contains(out, "not found") || !strings.Contains(out, "3| func add(a, b int) int {") ||
		!strings.Contains(out, "4| →return a + b··") {
		t.Fatalf("failed %v: %s", failed, out)
	}
}

func TestEditRefusesPlaceholders(t *testing.T) {
	for _, ph := range []string{"// rest of the code unchanged", "# ... existing code ...", "# (unchanged)", "/* ... rest of file ... */", "... existing code ..."} {
		out, got, failed := runEdit(t, "a()\nb()\n", map[string]any{"old_string": "a()\nb()", "new_string": "c()\n" + ph})
		if !failed || got != "a()\nb()\n" || !strings.Contains(out, "placeholder") {
			t.Fatalf("%q: failed %v, file %q: %s", ph, failed, got, out)
		}
	}
	// Not a placeholder: a real comment, or one already in the file.
	for _, c := range []struct{ file, new string }{
		{"a()\n", "// the rest of the file is parsed lazily\nb()"},
		{"a()\n// rest of the code unchanged\n", "// rest of the code unchanged\nb()"},
		{"a()\n", "unchanged := true"},
	} {
		if out, _, failed := runEdit(t, c.file, map[string]any{"old_string": "a()", "new_string": c.new}); failed {
			t.Fatalf("%q refused: %s", c.new, out)
		}
	}
}

// Several edits apply all or none.
func TestEditMany(t *testing.T) {
	file := "a\nb\nc\n"
	out, got, failed := runEdit(t, file, map[string]any{"edits": []map[string]any{
		{"old_string": "a", "new_string": "A"}, {"old_string": "c", "new_string": "C"}}})
	if failed || got != "A\nb\nC\n" || !strings.Contains(out, "2 replacement(s)") {
		t.Fatalf("failed %v, file %q: %s", failed, got, out)
	}
	out, got, failed = runEdit(t, file, map[string]any{"edits": []map[string]any{
		{"old_string": "a", "new_string": "A"}, {"old_string": "zzz", "new_string": "C"}}})
	if !failed || got != file || !strings.Contains(out, "edit 2 of 2") {
		t.Fatalf("failed %v, file %q: %s", failed, got, out)
	}
}

// The ladder never panics and, when it applies, replaces something.
func FuzzEditLadder(f *testing.F) {
	f.Add("a\r\nb\r\n", "a\nb", "c")
	f.Add("\tif x {\n\t\treturn\n\t}\n", "  if x {\n    return\n  }", "  y")
	f.Add("say(“hi”)\n", "say(\"hi\")", "x")
	f.Add("  1\tone\n", "  1\tone", "\x00\xff")
	f.Add(strings.Repeat("x\n", 5000), "x\nx", "y")
	f.Fuzz(func(t *testing.T, text, old, nw string) {
		if old == "" || old == nw || len(text) > 1<<16 {
			return
		}
		res, err := applyReplacement(text, replacement{Old: old, New: nw}, "f")
		if err != nil {
			return
		}
		if res.count != 1 || res.line < 1 {
			t.Fatalf("%+v", res)
		}
		if res.how == "" && res.text != strings.Replace(text, old, nw, 1) {
			t.Fatalf("an exact match gave %q", res.text)
		}
	})
}
