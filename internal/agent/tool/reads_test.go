package tool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write_file refuses an existing file the model has not read, or one that
// changed since (by content, not mtime); a read, an edit or its own write
// lets it through.
func TestWriteNeedsRead(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "a.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Roots: ResolveRoots([]string{root}), Reads: NewReads()}
	ctx := context.Background()
	write := func(content string) (string, bool) {
		res := prepare(t, writeFile{}, env, map[string]any{"path": "a.txt", "content": content}).Run(ctx, nil)
		return res.Output, res.Failed
	}
	if out, failed := write("x\n"); !failed || !strings.Contains(out, "has not been read") {
		t.Fatalf("unread write: failed %v: %s", failed, out)
	}
	if out, failed := write("new file\n"); !failed {
		t.Fatalf("unread write: %s", out)
	}
	// A new file needs no read.
	if res := prepare(t, writeFile{}, env, map[string]any{"path": "b.txt", "content": "b\n"}).Run(ctx, nil); res.Failed {
		t.Fatalf("new file: %s", res.Output)
	}
	read := func() {
		act, err := readFile{}.Prepare(env, []byte(`{"path":"a.txt"}`))
		if err != nil {
			t.Fatal(err)
		}
		if res := act.Run(ctx, nil); res.Failed {
			t.Fatal(res.Output)
		}
	}
	read()
	// Changed behind the model's back, same size and mtime: still refused,
	// and the change is shown.
	st, _ := os.Stat(file)
	if err := os.WriteFile(file, []byte("one\nTWO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(file, st.ModTime(), st.ModTime())
	if out, failed := write("x\n"); !failed || !strings.Contains(out, "changed since you last read it") || !strings.Contains(out, "2| TWO") {
		t.Fatalf("changed write: failed %v: %s", failed, out)
	}
	read()
	if out, failed := write("x\n"); failed {
		t.Fatalf("write after read: %s", out)
	}
	// Its own write counts as seen.
	if out, failed := write("y\n"); failed {
		t.Fatalf("second write: %s", out)
	}
	// An edit that fails because the file changed says so.
	if err := os.WriteFile(file, []byte("z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := prepare(t, editFile{}, env, map[string]any{"path": "a.txt", "old_string": "y", "new_string": "w"}).Run(ctx, nil)
	if !res.Failed || !strings.Contains(res.Output, "changed since you read it") || !strings.Contains(res.Output, "1| z") {
		t.Fatalf("edit of a changed file: %s", res.Output)
	}
}

func TestReadNumbersLines(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 12; i++ {
		b.WriteString("line\n")
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Roots: ResolveRoots([]string{root})}
	for args, want := range map[string]string{
		`{"path":"a.txt","offset":9,"limit":2}`:               " 9\tline\n10\tline\n\n[lines 9-10 of 12; call read_file with offset=11 to continue]",
		`{"file_path":"a.txt","start_line":11,"end_line":12}`: "11\tline\n12\tline",
	} {
		act, err := readFile{}.Prepare(env, []byte(args))
		if err != nil {
			t.Fatal(err)
		}
		if res := act.Run(context.Background(), nil); res.Output != want {
			t.Fatalf("%s: got %q, want %q", args, res.Output, want)
		}
	}
}
