package tool

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
)

// beforeChangeLog records every BeforeChange call with what the file held
// at that moment ("<absent>" if nothing).
type beforeChangeLog struct{ calls, after []string }

func (l *beforeChangeLog) afterHook(_ context.Context, p Path) { l.after = append(l.after, p.Rel) }

func (l *beforeChangeLog) hook(_ context.Context, p Path) error {
	b, err := os.ReadFile(p.Abs)
	if err != nil {
		l.calls = append(l.calls, p.Rel+"=<absent>")
		return nil
	}
	l.calls = append(l.calls, p.Rel+"="+string(b))
	return nil
}

// Every file a tool changes is announced before it changes, while it
// still holds its old bytes: write over, edit, and apply_patch's add,
// update, delete and move (both ends), so that undo's checkpoint can be
// stored first (issue 40).
func TestBeforeChangeSeesEveryFileBeforeItChanges(t *testing.T) {
	env, _ := patchWorkspace(t, map[string]string{"w.txt": "old w\n", "e.txt": "one\n", "a.go": "x\n", "gone.md": "bye\n", "mv.txt": "m\n"})
	var log beforeChangeLog
	env.BeforeChange, env.AfterChange = log.hook, log.afterHook
	if res := prepare(t, writeFile{}, env, map[string]any{"path": "w.txt", "content": "new w\n"}).Run(context.Background(), nil); res.Failed {
		t.Fatal(res.Output)
	}
	if res := prepare(t, editFile{}, env, map[string]any{"path": "e.txt", "old_string": "one", "new_string": "two"}).Run(context.Background(), nil); res.Failed {
		t.Fatal(res.Output)
	}
	patch := "*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** Add File: new.txt\n+hi\n*** Delete File: gone.md\n*** Update File: mv.txt\n*** Move to: moved.txt\n@@\n-m\n+n\n*** End Patch"
	if res := runPatch(t, env, applyPatch{}, patchArg(patch)); res.Failed {
		t.Fatal(res.Output)
	}
	for _, want := range []string{"w.txt=old w\n", "e.txt=one\n", "a.go=x\n", "new.txt=<absent>", "gone.md=bye\n", "mv.txt=m\n", "moved.txt=<absent>"} {
		if !slices.Contains(log.calls, want) {
			t.Errorf("no BeforeChange call saw %q; calls: %q", want, log.calls)
		}
	}
	for _, want := range []string{"w.txt", "e.txt", "a.go", "new.txt", "gone.md", "mv.txt", "moved.txt"} {
		if !slices.Contains(log.after, want) {
			t.Errorf("no AfterChange call for %s; calls: %q", want, log.after)
		}
	}
}

// A checkpoint that cannot be stored stops the change: no file changes
// without one.
func TestBeforeChangeErrorLeavesFileUnchanged(t *testing.T) {
	files := map[string]string{"a.txt": "one\n", "gone.md": "bye\n"}
	env, root := patchWorkspace(t, files)
	env.BeforeChange = func(context.Context, Path) error { return errors.New("disk full") }
	env.AfterChange = func(_ context.Context, p Path) { t.Errorf("AfterChange(%s) for a change not made", p.Rel) }
	if res := prepare(t, writeFile{}, env, map[string]any{"path": "a.txt", "content": "x\n"}).Run(context.Background(), nil); !res.Failed {
		t.Errorf("write succeeded without its checkpoint: %s", res.Output)
	}
	act, err := applyPatch{}.Prepare(env, []byte(patchArg("*** Begin Patch\n*** Delete File: gone.md\n*** End Patch")))
	if err != nil {
		t.Fatal(err)
	}
	if res := act.Run(context.Background(), nil); !res.Failed {
		t.Errorf("delete succeeded without its checkpoint: %s", res.Output)
	}
	if got := readAll(t, root); !equalMaps(got, files) {
		t.Fatalf("files changed without a checkpoint: %q", got)
	}
}
