package gitignore

import (
	"os"
	"path/filepath"
	"testing"
)

// TestIgnoredPath: the gitignore rules the chat's completion honours, read from the
// files of a real directory.
func TestIgnoredPath(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "# comment\n*.log\n!keep.log\n/build/\nnode_modules\ndocs/**/*.tmp\n\\#hash\n")
	write("sub/.gitignore", "local.txt\n!*.log\n")
	write(".git/info/exclude", "secret.txt\n")
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ig := New(root)
	for _, tc := range []struct {
		name    string
		dir     bool
		ignored bool
	}{
		{"app.log", false, true},
		{"keep.log", false, false},
		{"build", true, true},
		{"build", false, false}, // a file named build: the pattern is for directories
		{"src/build", true, false},
		{"node_modules", true, true},
		{"a/node_modules/x.js", false, true}, // inside an ignored directory
		{"docs/a/b/c.tmp", false, true},
		{"docs/c.txt", false, false},
		{"#hash", false, true},
		{"sub/local.txt", false, true},
		{"local.txt", false, false},
		{"sub/app.log", false, false}, // re-included by the deeper file
		{"secret.txt", false, true},
		{".git", true, true},
		{"main.go", false, false},
	} {
		if got := ig.IgnoredPath(tc.name, tc.dir); got != tc.ignored {
			t.Errorf("IgnoredPath(%q, dir=%v) = %v, want %v", tc.name, tc.dir, got, tc.ignored)
		}
	}
}
