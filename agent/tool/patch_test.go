package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
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
				if out, _, err := applyHunks(text, op.hunks, op.path); err == nil && utf8.ValidString(text) && !strings.HasSuffix(out, "\n") {
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
