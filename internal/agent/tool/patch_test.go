package tool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/crow-acp/crow-acp/acp"
)

func patchWorkspace(t *testing.T, files map[string]string) (*Env, string) {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &Env{Roots: ResolveRoots([]string{root})}, root
}

func readAll(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return out
}

// runPatch previews then runs a patch; the preview must show what is
// written.
func runPatch(t *testing.T, env *Env, tl Tool, args string) Result {
	t.Helper()
	act, err := tl.Prepare(env, []byte(args))
	if err != nil {
		return Failure("%v", err)
	}
	shown, perr := act.Preview(context.Background())
	res := act.Run(context.Background(), nil)
	if (perr != nil) != res.Failed {
		t.Fatalf("preview error %v, run %+v", perr, res)
	}
	if perr == nil && len(shown) != len(res.Content) {
		t.Fatalf("preview showed %d files, run wrote %d", len(shown), len(res.Content))
	}
	return res
}

func patchArg(p string) string {
	b, _ := jsonMarshal(map[string]string{"input": p})
	return string(b)
}

func TestApplyPatch(t *testing.T) {
	env, root := patchWorkspace(t, map[string]string{
		"a.go":   "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n",
		"old.md": "bye\n",
		"mv.txt": "x\ny\n",
	})
	patch := `*** Begin Patch
*** Update File: a.go
@@ func B() int {
-	return 2
+	return 3
*** Add File: sub/new.txt
+hello
+world
*** Delete File: old.md
*** Update File: mv.txt
*** Move to: moved.txt
@@
 x
-y
+z
*** End Patch`
	res := runPatch(t, env, applyPatch{}, patchArg(patch))
	if res.Failed {
		t.Fatal(res.Output)
	}
	want := map[string]string{
		"a.go":        "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 3\n}\n",
		"sub/new.txt": "hello\nworld\n",
		"moved.txt":   "x\nz\n",
	}
	if got := readAll(t, root); !equalMaps(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
}

// A hunk that does not apply leaves every file as it was and names itself
// with the nearest real lines.
func TestApplyPatchAllOrNone(t *testing.T) {
	files := map[string]string{"a.txt": "one\ntwo\n", "b.txt": "alpha\nbeta\ngamma\n"}
	env, root := patchWorkspace(t, files)
	patch := "*** Begin Patch\n*** Update File: a.txt\n-one\n+ONE\n*** Update File: b.txt\n@@\n alpha\n-betta\n+BETA\n gamma\n*** End Patch\n"
	res := runPatch(t, env, applyPatch{}, patchArg(patch))
	if !res.Failed || !strings.Contains(res.Output, "b.txt, hunk 1 (patch line 6)") || !strings.Contains(res.Output, "1| alpha") {
		t.Fatalf("%+v", res)
	}
	if got := readAll(t, root); !equalMaps(got, files) {
		t.Fatalf("files changed: %q", got)
	}
}

// Context lines go through the same ladder as edit_file; added lines are
// re-indented to the file's.
func TestApplyPatchTolerantContext(t *testing.T) {
	env, root := patchWorkspace(t, map[string]string{"a.go": "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n"})
	patch := "*** Begin Patch\n*** Update File: a.go\n@@\n     if x {\n-        return 1\n+        return 2\n     }\n*** End Patch"
	res := runPatch(t, env, applyPatch{}, patchArg(patch))
	if res.Failed || !strings.Contains(res.Output, "normalising indentation") {
		t.Fatalf("%+v", res)
	}
	if got := readAll(t, root)["a.go"]; got != "func f() {\n\tif x {\n\t\treturn 2\n\t}\n}\n" {
		t.Fatalf("a.go %q", got)
	}
}

// A patch sent through run_command is caught and applied as apply_patch.
func TestApplyPatchThroughShell(t *testing.T) {
	body := "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** End Patch\n"
	for _, line := range []string{
		"apply_patch <<'EOF'\n" + body + "EOF\n",
		"apply_patch <<\"PATCH\"\n" + body + "PATCH",
		"bash -lc 'apply_patch <<\"EOF\"\n" + body + "EOF\n'",
		"apply_patch '" + body + "'",
	} {
		env, root := patchWorkspace(t, map[string]string{"a.txt": "one\n"})
		b, _ := jsonMarshal(map[string]string{"command": line})
		act, err := runCommand{}.Prepare(env, b)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if act.PermissionKey != "edit" || act.Preview == nil {
			t.Fatalf("%q: not caught as a patch: %+v", line, act)
		}
		res := act.Run(context.Background(), nil)
		if res.Failed || readAll(t, root)["a.txt"] != "two\n" || !strings.Contains(res.Output, "apply_patch tool") {
			t.Fatalf("%q: %+v", line, res)
		}
	}
	for _, line := range []string{"echo apply_patch", "apply_patch <<EOF\n$(rm -rf x)\nEOF", "cd x && apply_patch <<'EOF'\n" + body + "EOF"} {
		if _, ok := shellPatch(line); ok {
			t.Fatalf("%q caught as a patch", line)
		}
	}
}

func TestForModel(t *testing.T) {
	has := func(ts []Tool, name string) bool {
		for _, t := range ts {
			if t.Definition().Name == name {
				return true
			}
		}
		return false
	}
	for model, patch := range map[string]bool{"gpt-5": true, "openai/gpt-4.1": true, "o3-mini": true, "o4": true, "gpt-5-codex": true,
		"glm-4.6": false, "qwen3-coder": false, "claude-sonnet-4": false, "ollama": false, "o1x": false} {
		ts := ForModel(model, "")
		if has(ts, "apply_patch") != patch || has(ts, "edit_file") == patch {
			t.Errorf("%s: apply_patch %v, want %v", model, has(ts, "apply_patch"), patch)
		}
	}
	if !has(ForModel("glm-4.6", ApplyPatchTool), "apply_patch") || !has(ForModel("gpt-5", EditFileTool), "edit_file") {
		t.Error("the configured edit tool is not honoured")
	}
}

func TestParsePatchErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "*** Begin Patch",
		"*** Begin Patch\n*** Update File: a":   "*** End Patch",
		"*** Begin Patch\n*** End Patch":        "changes no file",
		"*** Begin Patch\nhello\n*** End Patch": "line 2",
		"*** Begin Patch\n*** Add File: a\nx\n*** End Patch":         `starts with "+"`,
		"*** Begin Patch\n*** Update File: a\n*** End Patch":         "no hunks",
		"*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch": "line 4",
	} {
		if _, err := parsePatch(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func FuzzParsePatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a\n@@ x\n a\n-b\n+c\n*** End of File\n*** End Patch")
	f.Add("<<'EOF'\n*** Begin Patch\n*** Add File: a\n+\x00\x1b[2J\n*** End Patch\nEOF")
	f.Add("*** Begin Patch\n*** Update File: \xff\xfe\n*** Move to: b\n-\xc3\x28\n*** End Patch")
	f.Add("*** Begin Patch\n*** Delete File: a\n*** Upd")
	f.Add("*** Begin Patch\n" + strings.Repeat("*** Add File: a\n+x\n", 300) + "*** End Patch")
	f.Add(strings.Repeat("@@\n", 10000))
	f.Add("cat <<'EOF' | apply_patch\n*** Begin Patch\n*** Add File: a\n+$(x)\n*** End Patch\nEOF")
	f.Add("bash -lc \"cat <<-'P-1'\n\t*** Begin Patch\n\t*** Delete File: a\n\t*** End Patch\n\tP-1\n\"")
	f.Add("*** Begin Patch\r\n\t*** Update File: \ufeffa\r\n@@\r\n-\r\r\n+\x00\r\n*** End Patch")
	f.Fuzz(func(t *testing.T, in string) {
		ops, err := parsePatch(in)
		if err != nil {
			return
		}
		if len(ops) == 0 || len(ops) > maxPatchFiles {
			t.Fatalf("%d ops", len(ops))
		}
		for _, op := range ops {
			if op.path == "" {
				t.Fatal("empty path")
			}
			if op.kind == patchUpdate {
				text := strings.Repeat("a\n", 3)
				if out, _, err := applyHunks(context.Background(), text, op.hunks, op.path); err == nil && out != "" && !strings.HasSuffix(out, "\n") {
					t.Fatalf("applied text %q lacks its final newline", out)
				}
			}
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

var jsonMarshal = json.Marshal

// Issue 37: only the lines a hunk removes or adds change. Every other line
// keeps its bytes: its line ending in a CRLF or mixed file, a byte-order
// mark, trailing spaces on a context line matched loosely, a missing final
// newline; added lines take the file's most common ending.
func TestApplyPatchKeepsUntouchedBytes(t *testing.T) {
	for _, c := range []struct{ name, file, patch, want string }{
		{"crlf", "a\r\nb\r\nc\r\n", "-b\n+B\n+B2", "a\r\nB\r\nB2\r\nc\r\n"},
		{"mixed", "a\r\nb\nc\r\nd\r\n", "@@\n c\n-d\n+D", "a\r\nb\nc\r\nD\r\n"},
		{"mixed lf", "a\nb\r\nc\nd\n", "-a\n+A", "A\nb\r\nc\nd\n"},
		{"bom", "\ufeffpackage a\n\nfunc A() {}\n", " package a\n \n-func A() {}\n+func B() {}", "\ufeffpackage a\n\nfunc B() {}\n"},
		{"bom crlf", "\ufeffx\r\ny\r\n", "-x\n+X", "\ufeffX\r\ny\r\n"},
		{"context trailing space", "a  \nb\n", " a\n-b\n+B", "a  \nB\n"},
		{"no final newline kept", "a\nb", "-a\n+A", "A\nb"},
		{"no final newline, line added after", "a\nb", " b\n+c", "a\nb\nc\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, root := patchWorkspace(t, map[string]string{"f.txt": c.file})
			res := runPatch(t, env, applyPatch{}, patchArg("*** Begin Patch\n*** Update File: f.txt\n"+c.patch+"\n*** End Patch"))
			if res.Failed {
				t.Fatal(res.Output)
			}
			if got := readAll(t, root)["f.txt"]; got != c.want {
				t.Fatalf("f.txt is %q, want %q", got, c.want)
			}
		})
	}
}

// Issue 37: a file moved with *** Move to keeps its mode (a script stays
// executable), and so does a deleted one put back by a failed patch.
func TestApplyPatchMoveKeepsMode(t *testing.T) {
	env, root := patchWorkspace(t, map[string]string{"run.sh": "#!/bin/sh\necho a\n"})
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	patch := "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo a\n+echo b\n*** End Patch"
	if res := runPatch(t, env, applyPatch{}, patchArg(patch)); res.Failed {
		t.Fatal(res.Output)
	}
	fi, err := os.Stat(filepath.Join(root, "bin/run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o750 {
		t.Fatalf("moved file has mode %v, want 0750", fi.Mode().Perm())
	}
}

// Issue 37: deleting a file the model never read in this session is asked
// about every time (its whole text is in the question), as write_file
// refuses to overwrite one; a file read then changed is refused, as
// write_file refuses.
func TestApplyPatchDeleteUnread(t *testing.T) {
	env, root := patchWorkspace(t, map[string]string{"notes.txt": "mine\n", "b.txt": "b\n"})
	env.Reads = NewReads()
	del := patchArg("*** Begin Patch\n*** Delete File: notes.txt\n*** End Patch")
	act := prepare(t, applyPatch{}, env, json.RawMessage(del))
	if !strings.Contains(act.AlwaysAsk, "notes.txt") || !strings.Contains(act.AlwaysAsk, "not read") {
		t.Fatalf("deleting an unread file is not asked about every time: AlwaysAsk %q", act.AlwaysAsk)
	}
	if _, err := act.Preview(context.Background()); err != nil {
		t.Fatal(err)
	}
	env.Reads.saw(filepath.Join(root, "notes.txt"), "mine\n")
	if act := prepare(t, applyPatch{}, env, json.RawMessage(del)); act.AlwaysAsk != "" {
		t.Fatalf("a read file is still asked about: %q", act.AlwaysAsk)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("mine, edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runPatch(t, env, applyPatch{}, del)
	if !res.Failed || !strings.Contains(res.Output, "changed since you read it") {
		t.Fatalf("deleting a file changed since it was read: %+v", res)
	}
	if got := readAll(t, root)["notes.txt"]; got != "mine, edited\n" {
		t.Fatalf("notes.txt is %q", got)
	}
}

// Issue 37: a patch whose turn was cancelled writes nothing, however late
// its Run gets to the write.
func TestApplyPatchCancelledWritesNothing(t *testing.T) {
	files := map[string]string{"a.txt": "one\n"}
	env, root := patchWorkspace(t, files)
	act := prepare(t, applyPatch{}, env, json.RawMessage(patchArg("*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** Add File: b.txt\n+b\n*** End Patch")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := act.Run(ctx, nil)
	if !res.Failed || !strings.Contains(res.Output, "cancelled") {
		t.Fatalf("a cancelled patch ran: %+v", res)
	}
	if got := readAll(t, root); !equalMaps(got, files) {
		t.Fatalf("files after a cancelled patch: %q", got)
	}
}

// cancellingClient writes through to disk and cancels the turn after its
// first write, as a user pressing stop while a patch is being written.
type cancellingClient struct {
	acp.UnimplementedClient
	cancel context.CancelFunc
	writes int
}

func (c *cancellingClient) WriteTextFile(_ context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	c.writes++
	c.cancel()
	return &acp.WriteTextFileResponse{}, os.WriteFile(req.Path, []byte(req.Content), 0o644)
}

// A cancel between two files of a patch: the second is not written and the
// first is put back.
func TestApplyPatchCancelledMidwayRestores(t *testing.T) {
	files := map[string]string{"a.txt": "one\n", "b.txt": "bee\n"}
	env, root := patchWorkspace(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &cancellingClient{cancel: cancel}
	env.Client, env.ClientWrite = client, true
	act := prepare(t, applyPatch{}, env, json.RawMessage(patchArg("*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** Update File: b.txt\n-bee\n+BEE\n*** End Patch")))
	res := act.Run(ctx, nil)
	if !res.Failed || !strings.Contains(res.Output, "cancelled") || client.writes != 2 {
		t.Fatalf("result %+v after %d writes (the change and its undo)", res, client.writes)
	}
	if got := readAll(t, root); !equalMaps(got, files) {
		t.Fatalf("files after a patch cancelled midway: %q", got)
	}
}

// Issue 37: matching a hunk against a file of repeated lines took minutes
// (each offset compared line by line); it is linear now, stops when the
// turn is cancelled, and a patch that needs too much work is refused.
func TestApplyPatchMatchingIsBounded(t *testing.T) {
	file := strings.Repeat("x\n", 40000)
	long := hunk{old: append(slices.Repeat([]string{"x"}, 20000), "y"), new: []string{"z"}, keep: []int{-1}}
	start := time.Now()
	if _, _, err := applyHunks(context.Background(), file, []hunk{long}, "f"); err == nil {
		t.Fatal("a hunk not in the file matched")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("matching a 20,000-line hunk against 40,000 lines took %v", took)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := applyHunks(cancelled, file, []hunk{long}, "f"); !errors.Is(err, context.Canceled) {
		t.Fatalf("matching in a cancelled turn: %v", err)
	}
	// Every hunk matches only loosely just after the one before, while an
	// exact copy of its line sits at the top: each scans the rest of the
	// file first. The bound stops it.
	lines := []string{"x"}
	var hunks []hunk
	for range 5000 {
		lines = append(lines, "x ")
		hunks = append(hunks, hunk{old: []string{"x"}, new: []string{"y"}, keep: []int{-1}})
	}
	lines = append(lines, slices.Repeat([]string{"filler"}, 60000)...)
	_, _, err := applyHunks(context.Background(), strings.Join(lines, "\n")+"\n", hunks, "f")
	if err == nil || !strings.Contains(err.Error(), "split it") {
		t.Fatalf("a patch over the work bound: %v", err)
	}
}

// The shell wrappers models put around a patch: as a command line (run
// through run_command) and as apply_patch's own input.
func TestPatchShellWrappers(t *testing.T) {
	body := "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** End Patch\n"
	for _, line := range []string{
		"cat <<'EOF' | apply_patch\n" + body + "EOF\n",
		"bash -lc \"cat <<'EOF' | apply_patch\n" + body + "EOF\n\"",
	} {
		if got, ok := shellPatch(line); !ok || got != body {
			t.Errorf("%q: %q %v", line, got, ok)
		}
	}
	for _, line := range []string{
		"cat <<'EOF' | apply_patch | tee x\n" + body + "EOF\n",
		"cat x <<'EOF' | apply_patch\n" + body + "EOF\n",
		"cat <<EOF | apply_patch\n" + strings.Replace(body, "two", "$(rm -rf x)", 1) + "EOF\n",
		"cat <<'EOF'\n" + body + "EOF\n", // prints the patch: not a patch on a command line
	} {
		if _, ok := shellPatch(line); ok {
			t.Errorf("%q caught as a patch", line)
		}
	}
	for _, input := range []string{
		"cat <<'EOF'\n" + body + "EOF",
		"<<EOF\n" + body + "EOF\n",
		"apply_patch <<'EOF'\n" + body + "EOF\n",
		"cat <<'EOF' | apply_patch\n" + body + "EOF",
		"cat <<EOF\n" + body + "EOF",                                           // as input nothing expands it
		"*** Begin Patch\n  *** Update File: a.txt\n-one\n+two\n*** End Patch", // codex scenario 017
	} {
		ops, err := parsePatch(input)
		if err != nil || len(ops) != 1 || ops[0].path != "a.txt" {
			t.Errorf("%q: %+v %v", input, ops, err)
		}
	}
	// A patch error's line is the line of the input.
	if _, err := parsePatch("cat <<'EOF'\n*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch\nEOF"); err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("line of an error in a wrapped patch: %v", err)
	}
}

// A command sent as an argv array runs exactly as given: the quoted line
// parses back to the same words.
func TestQuoteArgv(t *testing.T) {
	for _, argv := range [][]string{
		{"rg", "-n", "a b"},
		{"printf", "%s\n", "$HOME", "`id`", "it's", "a\"b", "x=y", "~", "*", "#", ""},
		{"if", "then"},
		{"python3", "-c", "import sys\nprint(sys.argv)\t# tab"},
		{"echo", "\x1b[31m", "caf\u00e9"},
	} {
		line, err := QuoteArgv(argv)
		if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		if got := parseArgv(t, line); !slices.Equal(got, argv) {
			t.Errorf("%q quoted as %q parses as %q", argv, line, got)
		}
	}
	if _, err := QuoteArgv([]string{"a\x00b"}); err == nil {
		t.Error("a NUL byte was quoted")
	}
	if _, err := QuoteArgv(nil); err == nil {
		t.Error("an empty argv was quoted")
	}
}

// parseArgv reads a line of one simple command as POSIX sh does.
func parseArgv(t testing.TB, line string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) != 1 {
		t.Fatalf("%q: %v", line, err)
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 {
		t.Fatalf("%q is not one simple command", line)
	}
	var out []string
	for _, w := range call.Args {
		s, ok := literal(w)
		if !ok {
			t.Fatalf("%q: word %q expands", line, describeWord(w))
		}
		out = append(out, s)
	}
	return out
}

func FuzzQuoteArgv(f *testing.F) {
	f.Add("rg", "a b")
	f.Add("if", "$(id)\n`x`")
	f.Add("\x1b[2J", "\u00ff\ufeff'\"\\")
	f.Add(strings.Repeat("'", 1000), "")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // arguments decoded from JSON are valid UTF-8 (and mvdan.cc/sh reads only that)
		}
		argv := []string{a, b}
		line, err := QuoteArgv(argv)
		if err != nil {
			if !strings.ContainsRune(a+b, 0) {
				t.Fatalf("%q: %v", argv, err)
			}
			return
		}
		if got := parseArgv(t, line); !slices.Equal(got, argv) {
			t.Fatalf("%q quoted as %q parses as %q", argv, line, got)
		}
	})
}

// codex's shell sends a workdir with each command: a command runs there
// (the cd is part of the line shown and checked), a patch's relative paths
// are in it.
func TestWorkdir(t *testing.T) {
	env, root := patchWorkspace(t, map[string]string{"sub/a.txt": "one\n"})
	for wd, want := range map[string]string{"": "ls", ".": "ls", root: "ls", "sub": "cd sub && (ls\n)", root + "/sub": "cd sub && (ls\n)"} {
		b, _ := jsonMarshal(map[string]string{"command": "ls", "workdir": wd})
		act, err := runCommand{}.Prepare(env, b)
		if err != nil {
			t.Fatal(err)
		}
		if act.Title != commandTitle(want) {
			t.Errorf("workdir %q: title %q, want %q", wd, act.Title, commandTitle(want))
		}
	}
	b, _ := jsonMarshal(map[string]string{"input": "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** End Patch", "workdir": "sub"})
	if res := runPatch(t, env, applyPatch{}, string(b)); res.Failed || readAll(t, root)["sub/a.txt"] != "two\n" {
		t.Fatalf("patch in workdir sub: %+v", res)
	}
}

// Issue 37: no edit tool writes once its turn is cancelled (write_file and
// edit_file share the write with apply_patch).
func TestEditToolsCancelledWriteNothing(t *testing.T) {
	for _, c := range []struct {
		tl   Tool
		args map[string]any
	}{
		{writeFile{}, map[string]any{"path": "new.txt", "content": "x\n"}},
		{editFile{}, map[string]any{"path": "a.txt", "old_string": "one", "new_string": "two"}},
	} {
		files := map[string]string{"a.txt": "one\n"}
		env, root := patchWorkspace(t, files)
		act := prepare(t, c.tl, env, c.args)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if res := act.Run(ctx, nil); !res.Failed {
			t.Errorf("%T ran after its turn was cancelled: %+v", c.tl, res)
		}
		if got := readAll(t, root); !equalMaps(got, files) {
			t.Errorf("%T wrote after its turn was cancelled: %q", c.tl, got)
		}
	}
}
