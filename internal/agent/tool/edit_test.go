package tool

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
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
	// Not a placeholder: a real comment, or one the file already has
	// (kept where it is, or moved).
	for _, c := range []struct{ file, old, new string }{
		{"a()\n", "a()", "// the rest of the file is parsed lazily\nb()"},
		{"a()\n// rest of the code unchanged\n", "a()\n// rest of the code unchanged", "// rest of the code unchanged\nb()"},
		{"a()\n// rest of the code unchanged\n", "a()", "b()"},
		{"a()\n", "a()", "unchanged := true"},
	} {
		if out, _, failed := runEdit(t, c.file, map[string]any{"old_string": c.old, "new_string": c.new}); failed {
			t.Fatalf("%q refused: %s", c.new, out)
		}
	}
	// A second copy of a placeholder the file has is new: it stands for
	// a() here.
	out, got, failed := runEdit(t, "a()\n// rest of the code unchanged\n", map[string]any{"old_string": "a()", "new_string": "// rest of the code unchanged\nb()"})
	if !failed || got != "a()\n// rest of the code unchanged\n" || !strings.Contains(out, "line 1 of the result") {
		t.Fatalf("failed %v, file %q: %s", failed, got, out)
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

// New text takes the file's line endings, and the file keeps its
// byte-order mark: an old_string that matches with new_string in the
// other ending left both in the file (opencode's edit.test.ts "line
// endings" cases).
func TestEditKeepsLineEndingsAndBOM(t *testing.T) {
	for _, c := range []struct {
		name, file, old, new, want string
	}{
		{"lf file, crlf new", "alpha\nbeta\ngamma\n", "alpha\nbeta\ngamma", "alpha\r\nbeta-updated\r\ngamma", "alpha\nbeta-updated\ngamma\n"},
		{"crlf file, lf new", "alpha\r\nbeta\r\ngamma\r\n", "alpha\r\nbeta\r\ngamma", "alpha\nbeta-updated\ngamma", "alpha\r\nbeta-updated\r\ngamma\r\n"},
		{"crlf file, lf old and new", "a\r\nb\r\n", "a\nb", "x\ny", "x\r\ny\r\n"},
		{"crlf file, crlf new, lf old", "a\r\nb\r\n", "a\nb", "x\r\ny", "x\r\ny\r\n"},
		{"bom file", "\ufeffusing System;\nclass A {}\n", "using System;", "using Up;\nusing Down;", "\ufeffusing Up;\nusing Down;\nclass A {}\n"},
		{"bom copied into old_string", "\ufeffa\nb\n", "\ufeffa", "c", "\ufeffc\nb\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, got, failed := runEdit(t, c.file, map[string]any{"old_string": c.old, "new_string": c.new})
			if failed || got != c.want {
				t.Fatalf("file %q, want %q (failed %v: %s)", got, c.want, failed, out)
			}
		})
	}
	out, got, failed := runEdit(t, "a\r\nb\r\nc\r\n", map[string]any{"edits": []map[string]any{
		{"old_string": "a", "new_string": "x\ny"}, {"old_string": "c", "new_string": "z\n"}}})
	if failed || got != "x\r\ny\r\nb\r\nz\r\n\r\n" {
		t.Fatalf("several edits: file %q (failed %v: %s)", got, failed, out)
	}
}

// write_file over an existing file writes in its line endings and keeps
// its byte-order mark; a new file is written as sent.
func TestWriteKeepsLineEndingsAndBOM(t *testing.T) {
	env, root := patchWorkspace(t, map[string]string{"crlf.txt": "one\r\ntwo\r\n", "bom.cs": "\ufeffusing A;\n"})
	env.Reads = NewReads()
	for name, text := range readAll(t, root) {
		env.Reads.saw(mustResolve(t, env, name).Abs, text)
	}
	for _, c := range []struct{ path, content, want string }{
		{"crlf.txt", "uno\ndos\ntres\n", "uno\r\ndos\r\ntres\r\n"},
		{"bom.cs", "using B;\r\n", "\ufeffusing B;\n"},
		{"new.txt", "a\r\nb\n", "a\r\nb\n"},
	} {
		res := runPatch(t, env, writeFile{}, jsonOf(map[string]string{"path": c.path, "content": c.content}))
		if got := readAll(t, root)[c.path]; res.Failed || got != c.want {
			t.Errorf("%s: %q, want %q (%s)", c.path, got, c.want, res.Output)
		}
	}
}

// An empty old_string creates a file that does not exist (Claude Code,
// opencode and gemini-cli all do; crow-acp refused, and every model
// trained on them lost a turn), fills an empty one, and is refused with
// the reason for a file with content.
func TestEditEmptyOldString(t *testing.T) {
	env, root := patchWorkspace(t, map[string]string{"full.txt": "keep me\n", "blank.txt": "  \n"})
	for _, c := range []struct {
		args   string
		path   string
		want   string
		failed bool
		says   string
	}{
		{`{"path":"new.txt","old_string":"","new_string":"hello\r\n"}`, "new.txt", "hello\r\n", false, "Created new.txt (1 lines)"},
		{`{"path":"nested/dir/f.txt","old_string":"","new_string":"x"}`, "nested/dir/f.txt", "x", false, "Created"},
		{`{"path":"blank.txt","old_string":"","new_string":"filled\n"}`, "blank.txt", "filled\n", false, "Edited"},
		{`{"path":"full.txt","old_string":"","new_string":"replaced\n"}`, "full.txt", "keep me\n", true, "already exists with 1 lines"},
		{`{"path":"made.txt","edits":[{"old_string":"","new_string":"one\ntwo\n"},{"old_string":"two","new_string":"TWO"}]}`, "made.txt", "one\nTWO\n", false, "then made 1 replacement(s)"},
		{`{"path":"gone.txt","old_string":"a","new_string":"b"}`, "gone.txt", "", true, "not found"},
	} {
		res := runPatch(t, env, editFile{}, c.args)
		got, exists := readAll(t, root)[c.path]
		if res.Failed != c.failed || got != c.want || !c.failed && !exists || !strings.Contains(res.Output, c.says) {
			t.Errorf("%s: failed %v, %s = %q (exists %v): %s", c.args, res.Failed, c.path, got, exists, res.Output)
		}
	}
	for _, args := range []string{
		`{"path":"x.txt","edits":[{"old_string":"a","new_string":"b"},{"old_string":"","new_string":"c"}]}`,
		`{"path":"x.txt","old_string":"","new_string":""}`,
	} {
		if _, err := (editFile{}).Prepare(env, []byte(args)); err == nil {
			t.Errorf("%s: accepted", args)
		}
	}
}

// gemini-cli's expected_replacements: the count the model states must be
// the real one; a wrong count is refused with the real count.
func TestEditExpectedReplacements(t *testing.T) {
	out, got, failed := runEdit(t, "old text\nold text\nold text", map[string]any{"old_string": "old", "new_string": "new", "expected_replacements": 3})
	if failed || got != "new text\nnew text\nnew text" || !strings.Contains(out, "3 replacement(s)") {
		t.Fatalf("failed %v, file %q: %s", failed, got, out)
	}
	for _, c := range []struct {
		file   string
		expect int
		says   string
	}{
		{"foo foo foo", 2, "expected_replacements is 2, but old_string matches 3 places"},
		{"foo bar", 2, "matches 1 place in"},
	} {
		out, got, failed := runEdit(t, c.file, map[string]any{"old_string": "foo", "new_string": "baz", "expected_replacements": c.expect})
		if !failed || got != c.file || !strings.Contains(out, c.says) {
			t.Errorf("%q, %d: failed %v, file %q: %s", c.file, c.expect, failed, got, out)
		}
	}
}

// replace_all with a tolerant match applies at every place the rung finds
// and says so (crush's TestNormalizedReplace "replaceAll with multiple
// matches", gemini-cli's "loop index in flexible replacement"); it used
// to refuse with "add surrounding lines", which cannot help a model that
// asked for every occurrence.
func TestEditReplaceAllTolerant(t *testing.T) {
	for _, c := range []struct {
		name, file, old, new, want, how string
	}{
		{"indentation, tabs kept", "func a() {\n\tfoo()\n}\nfunc b() {\n\tfoo()\n}\n", "    foo()", "    bar()", "func a() {\n\tbar()\n}\nfunc b() {\n\tbar()\n}\n", "normalising indentation (all 2 places)"},
		{"several lines", "  match1\n  match2\n  match1\n  match2\n", "match1\nmatch2", "replaced1\nreplaced2\nreplaced3", "  replaced1\n  replaced2\n  replaced3\n  replaced1\n  replaced2\n  replaced3\n", "(all 2 places)"},
		{"quotes", "say(“hi”)\nsay(“hi”)\n", `say("hi")`, `say("yo")`, "say(\"yo\")\nsay(\"yo\")\n", "normalising quotes (all 2 places)"},
		{"line endings", "a\r\nb\r\na\r\nb\r\n", "a\nb", "c", "c\r\nc\r\n", "normalising line endings (all 2 places)"},
		{"trailing whitespace", "x = 1  \ny\nx = 1 \n", "x = 1\n", "x = 2\n", "x = 2\ny\nx = 2\n", "trailing whitespace (all 2 places)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, got, failed := runEdit(t, c.file, map[string]any{"old_string": c.old, "new_string": c.new, "replace_all": true})
			if failed || got != c.want || !strings.Contains(out, c.how) {
				t.Fatalf("file %q, want %q (failed %v: %s)", got, c.want, failed, out)
			}
		})
	}
	// Without replace_all the advice names it.
	out, _, failed := runEdit(t, "\tx()\n\tx()\n", map[string]any{"old_string": "  x()", "new_string": "  y()"})
	if !failed || !strings.Contains(out, "matches 2 places after normalising indentation") || !strings.Contains(out, "replace_all=true") {
		t.Fatalf("failed %v: %s", failed, out)
	}
	// A place whose indentation cannot be mapped: refused, with advice
	// that fits replace_all.
	file := "  if a {\n    x()\n  }\n\tif a {\n  x()\n\t}\n"
	out, got, failed := runEdit(t, file, map[string]any{"old_string": "if a {\n  x()\n}", "new_string": "if a {\n  y()\n}", "replace_all": true})
	if !failed || got != file || !strings.Contains(out, "one at a time") {
		t.Fatalf("failed %v, file %q: %s", failed, got, out)
	}
}

// A new_string already indented like the file, where old_string is not,
// is not indented twice (gemini-cli's edit.test.ts "should NOT insert
// extra newlines when old_string starts with a blank line").
func TestEditNewAlreadyIndented(t *testing.T) {
	out, got, failed := runEdit(t, "  // some comment\n\n  function oldFunc() {}", map[string]any{"old_string": "\nfunction oldFunc() {}", "new_string": "\n  function newFunc() {}"})
	if failed || got != "  // some comment\n\n  function newFunc() {}" {
		t.Fatalf("file %q (failed %v: %s)", got, failed, out)
	}
}

// A replace_all through the quotes rung writes as it finds: a million
// places in a 4 MB file hold no list of them (a model can send a
// one-character old_string).
func TestEditReplaceAllQuotesBounded(t *testing.T) {
	text := strings.Repeat("“ ", 1<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := applyReplacement(text, replacement{Old: `"`, New: "'", All: true}, "f")
	runtime.ReadMemStats(&after)
	if err != nil || res.count != 1<<20 || res.text != strings.Repeat("' ", 1<<20) {
		t.Fatalf("count %d, err %v", res.count, err)
	}
	if used := after.TotalAlloc - before.TotalAlloc; used > 20*uint64(len(text)) { // the offsets map of asciiQuotes is 8 bytes a byte
		t.Fatalf("%d bytes allocated for a %d-byte file", used, len(text))
	}
}
