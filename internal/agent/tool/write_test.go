package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

func prepare(t *testing.T, tl Tool, env *Env, args any) *Action {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	act, err := tl.Prepare(env, raw)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if act.Preview == nil {
		t.Fatal("an edit has no Preview")
	}
	return act
}

func TestEditPreviewIsWhatRunWrites(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "a.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Roots: ResolveRoots([]string{root})}
	ctx := context.Background()
	for _, c := range []struct {
		tool Tool
		args any
		want acp.Diff
	}{
		{editFile{}, map[string]any{"path": "a.txt", "old": "two", "new": "three"}, acp.Diff{Path: file, OldText: ptr("one\ntwo\n"), NewText: "one\nthree\n"}},
		{writeFile{}, map[string]any{"path": "a.txt", "content": "new\n"}, acp.Diff{Path: file, OldText: ptr("one\nthree\n"), NewText: "new\n"}},
		{writeFile{}, map[string]any{"path": "sub/b.txt", "content": "b\n"}, acp.Diff{Path: filepath.Join(root, "sub/b.txt"), NewText: "b\n"}},
	} {
		act := prepare(t, c.tool, env, c.args)
		shown, err := act.Preview(ctx)
		if err != nil {
			t.Fatalf("%v: Preview: %v", c.args, err)
		}
		if len(shown) != 1 || shown[0].Diff == nil || !reflect.DeepEqual(*shown[0].Diff, c.want) {
			t.Fatalf("%v: preview %+v, want diff %+v", c.args, shown, c.want)
		}
		res := act.Run(ctx, nil)
		if res.Failed || !reflect.DeepEqual(res.Content, shown) {
			t.Fatalf("%v: Run gave %+v, the preview showed %+v", c.args, res, shown)
		}
		if b, _ := os.ReadFile(c.want.Path); string(b) != c.want.NewText {
			t.Fatalf("%v: file holds %q, want %q", c.args, b, c.want.NewText)
		}
	}
}

// A file that changes between the preview (what the user approved) and the
// write must not be written.
func TestEditRefusesFileChangedAfterPreview(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "a.txt")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := &Env{Roots: ResolveRoots([]string{root})}
	ctx := context.Background()
	for _, c := range []struct {
		name          string
		tool          Tool
		args          any
		before, after string // "" before: the file does not exist yet
	}{
		{"edit", editFile{}, map[string]any{"path": "a.txt", "old": "x", "new": "y"}, "x\n", "x\nz\n"},
		{"overwrite", writeFile{}, map[string]any{"path": "a.txt", "content": "new"}, "old\n", "other\n"},
		{"create", writeFile{}, map[string]any{"path": "a.txt", "content": "new"}, "", "appeared\n"},
	} {
		os.Remove(file)
		if c.before != "" {
			write(c.before)
		}
		act := prepare(t, c.tool, env, c.args)
		if _, err := act.Preview(ctx); err != nil {
			t.Fatalf("%s: Preview: %v", c.name, err)
		}
		write(c.after)
		res := act.Run(ctx, nil)
		if !res.Failed || !strings.Contains(res.Output, "changed after the edit was shown for approval") {
			t.Fatalf("%s: Run after a change = %+v, want a failure saying the file changed", c.name, res)
		}
		if b, _ := os.ReadFile(file); string(b) != c.after {
			t.Fatalf("%s: file holds %q, want it untouched (%q)", c.name, b, c.after)
		}
	}

	// A preview that failed approved nothing: a file fixed meanwhile is
	// still not written.
	write("nothing\n")
	act := prepare(t, editFile{}, env, map[string]any{"path": "a.txt", "old": "x", "new": "y"})
	if _, err := act.Preview(ctx); err == nil || !strings.Contains(err.Error(), "old_string not found") {
		t.Fatalf("Preview of a missing text: %v", err)
	}
	write("x\n")
	if res := act.Run(ctx, nil); !res.Failed {
		t.Fatalf("Run after a failed preview wrote: %+v", res)
	}
}

// A preview's error is the failure Run gives without one.
func TestEditPreviewFailsLikeRun(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("x x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := &Env{Roots: ResolveRoots([]string{root})}
	ctx := context.Background()
	for _, c := range []struct {
		tool Tool
		args any
	}{
		{editFile{}, map[string]any{"path": "a.txt", "old": "nope", "new": "y"}},
		{editFile{}, map[string]any{"path": "a.txt", "old": "x", "new": "y"}},
		{editFile{}, map[string]any{"path": "missing.txt", "old": "x", "new": "y"}},
		{writeFile{}, map[string]any{"path": "dir", "content": "y"}},
	} {
		_, err := prepare(t, c.tool, env, c.args).Preview(ctx)
		res := prepare(t, c.tool, env, c.args).Run(ctx, nil)
		if err == nil || !res.Failed || res.Output != "Error: "+err.Error() {
			t.Fatalf("%v: preview error %v, Run %+v", c.args, err, res)
		}
	}
}

// A change too big to show is described in a line, in the preview and the
// result alike.
func TestEditDiffCap(t *testing.T) {
	root := t.TempDir()
	big := strings.Repeat("0123456789abcdef\n", maxDiffBytes/17+1)
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Roots: ResolveRoots([]string{root})}
	act := prepare(t, editFile{}, env, map[string]any{"path": "big.txt", "old": "0123", "new": "3210", "all": true})
	shown, err := act.Preview(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(shown) != 1 || shown[0].Diff != nil || shown[0].Content == nil || shown[0].Content.Content.Text == nil || !strings.Contains(shown[0].Content.Content.Text.Text, "too large to show") {
		t.Fatalf("preview of a huge change: %+v", shown)
	}
	if res := act.Run(context.Background(), nil); res.Failed || !reflect.DeepEqual(res.Content, shown) {
		t.Fatalf("Run: %+v", res)
	}
}
