package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnored: the gitignore rules completion honours, read from the
// files of a real directory.
func TestIgnored(t *testing.T) {
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
	ig := newIgnorer(root)
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
		if got := ig.ignored(tc.name, tc.dir); got != tc.ignored {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tc.name, tc.dir, got, tc.ignored)
		}
	}
}

// FuzzParseIgnore: whatever a workspace's .gitignore holds, parsing and
// matching neither panic nor exceed the bounds on what is kept.
func FuzzParseIgnore(f *testing.F) {
	for _, s := range []string{
		"*.log\n!keep.log\n/build/\n", "[a-\n", "\\", "**/**/**", "a\x00b\n\x1b[2J\n", "\xff\xfe*\n",
		strings.Repeat("*", 5000), strings.Repeat("a*\n", 3000), "[!]]\n[^a]\n",
	} {
		f.Add(s, "a/b/c.log")
	}
	f.Fuzz(func(t *testing.T, text, name string) {
		rules := parseIgnore(text)
		if len(rules) > maxIgnorePatterns {
			t.Fatalf("%d rules kept", len(rules))
		}
		decide(rules, name, false)
		decide(rules, name, true)
	})
}
