package tool

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// What gemini-cli's omissionPlaceholderDetector.test.ts catches, and the
// shapes other models write (Claude's "... existing code ...", GPT's "#
// rest of the file unchanged"), are placeholders; the same words in code,
// after code on the line, or in a comment that says something else are
// not.
func TestPlaceholderKey(t *testing.T) {
	for _, l := range []string{
		// gemini-cli's cases.
		"(rest of methods ...)", "(rest of code ...)", "(unchanged code ...)", "// rest of methods ...",
		"# rest of methods ...", "-- rest of methods ...", "/* rest of methods ... */", "(Rest Of Methods ...)",
		// Other models' shapes.
		"// ... existing code ...", "  # ... existing code ...", "... existing code ...", "{/* ... existing JSX ... */}",
		"<!-- rest of the page unchanged -->", "// rest of the code remains the same", "# Rest of the file unchanged",
		"// existing code", "# (unchanged)", "// (omitted for brevity)", "// code omitted for brevity",
		"// ... other methods ...", "# ... 200 lines unchanged ...", "// …", "// ...", "/* ... */", "; rest of config ...",
		"// keep existing imports", "[rest of file unchanged]", "// same as before", "% rest of the document ...",
		"// the rest of the implementation stays as it is", "// snip", "# ... truncated ...",
	} {
		if _, ok := placeholderKey(l); !ok {
			t.Errorf("%q is not taken for a placeholder", l)
		}
	}
	for _, l := range []string{
		// gemini-cli's cases.
		`const note = "(rest of methods ...)";`, "return value; // rest of methods ...", `const message = "loading...";`,
		// Real code and real comments.
		"...", "    ...", "...rest", "...args,", "// the rest of the file is parsed lazily", "unchanged := true",
		"// Other methods", "# Load config...", "// Existing users are migrated", "// remaining items",
		"// Original implementation", "// unchanged values default to zero", "# type: ignore", "#include <stdio.h>",
		"#[derive(Debug)]", "---", "// TODO: implement", "(a, b)", "// see the rest of the docs at https://x",
		"// Remaining work: wire up the API", "(rest of methods ...) = x", "/* x = 1 ... */", "// rest is a REST client",
		"- rest of the methods", "* ...", "[...]", "(...)", "// ... and so on", "// skipped", "// Truncated", "// before",
	} {
		if key, ok := placeholderKey(l); ok {
			t.Errorf("%q is taken for the placeholder %q", l, key)
		}
	}
}

// A placeholder counts as new when the result has it more often than the
// text before: one the file already has may stay or move.
func TestNewPlaceholder(t *testing.T) {
	for _, c := range []struct {
		before, after string
		line          int
	}{
		{"a()\nb()\n", "a()\n// ... existing code ...\n", 2},
		{"x\r\n(rest of methods ...)\r\n", "(rest of methods ...)\r\n(unchanged code ...)\r\n", 2},
		{"(rest of methods ...)\n(unchanged code ...)\n", "(unchanged code ...)\n(rest of methods ...)\n", 0},
		{"// rest of code ...\na()\n", "// rest of code ...\n//   rest   of code ...\n", 1},
		{"a()\n", "const s = \"(rest of methods ...)\";\n", 0},
	} {
		line, n := newPlaceholder(c.before, c.after)
		if n != c.line {
			t.Errorf("%q -> %q: line %d (%q), want %d", c.before, c.after, n, line, c.line)
		}
	}
}

// Every tool that writes a file refuses a new placeholder, names the line
// and says what to send, and writes nothing: edit_file (single and
// several edits), write_file over an existing file, apply_patch.
func TestPlaceholderRefusedByEveryTool(t *testing.T) {
	const file = "class A {\n  run() {}\n  stop() {}\n}\n"
	out, got, failed := runEdit(t, file, map[string]any{"old_string": "  run() {}\n  stop() {}", "new_string": "  run() { go(); }\n  (rest of methods ...)"})
	if !failed || got != file || !strings.Contains(out, `line 3 of the result, "(rest of methods ...)"`) || !strings.Contains(out, "new_string") {
		t.Errorf("edit_file: failed %v, file %q: %s", failed, got, out)
	}
	out, got, failed = runEdit(t, file, map[string]any{"edits": []map[string]any{
		{"old_string": "run() {}", "new_string": "run() { go(); }"}, {"old_string": "  stop() {}", "new_string": "  // rest of methods ..."}}})
	if !failed || got != file || !strings.Contains(out, "placeholder") {
		t.Errorf("several edits: failed %v, file %q: %s", failed, got, out)
	}
	env, root := patchWorkspace(t, map[string]string{"a.ts": file})
	env.Reads = NewReads()
	env.Reads.saw(mustResolve(t, env, "a.ts").Abs, file)
	res := runPatch(t, env, writeFile{}, `{"path":"a.ts","content":"class A {\n  // ... existing code ...\n}\n"}`)
	if !res.Failed || readAll(t, root)["a.ts"] != file || !strings.Contains(res.Output, "whole content") {
		t.Errorf("write_file: %+v", res)
	}
	res = runPatch(t, env, applyPatch{}, patchArg("*** Begin Patch\n*** Update File: a.ts\n@@\n   run() {}\n-  stop() {}\n+  // rest of methods ...\n*** End Patch"))
	if !res.Failed || readAll(t, root)["a.ts"] != file || !strings.Contains(res.Output, "placeholder") || !strings.Contains(res.Output, "context") {
		t.Errorf("apply_patch: %+v", res)
	}
	// Creating a file is not overwriting code: a placeholder there is the
	// model's business.
	res = runPatch(t, env, writeFile{}, `{"path":"new.ts","content":"// ... existing code ...\n"}`)
	if res.Failed {
		t.Errorf("write_file of a new file: %s", res.Output)
	}
}

// The detector never panics, is bounded, and agrees with itself on a
// text and the same text again.
func FuzzPlaceholder(f *testing.F) {
	f.Add("// ... existing code ...")
	f.Add("(rest of methods ...)\n\x00\x1b[2J")
	f.Add("#\xff\xfe rest of \xc3\x28 code ...")
	f.Add("<!--" + strings.Repeat(".", 5000) + "-->")
	f.Add(strings.Repeat("// rest of code ...\n", 2000))
	f.Add("{/*(<[" + strings.Repeat("… ", 100))
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range strings.Split(s, "\n") {
			key, ok := placeholderKey(l)
			if ok && (len(strings.TrimSpace(l)) > maxPlaceholderLine || key == "" || !utf8.ValidString(key) && utf8.ValidString(l)) {
				t.Fatalf("%q: key %q", l, key)
			}
		}
		if _, n := newPlaceholder(s, s); n != 0 {
			t.Fatalf("a text has a placeholder it did not have: line %d", n)
		}
	})
}
