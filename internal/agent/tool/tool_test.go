package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	root := t.TempDir()
	outsideDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(outsideDir, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outsideDir, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outsideDir, filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	env := &Env{Roots: ResolveRoots([]string{root})}
	for _, c := range []struct {
		path   string
		inside bool
	}{
		{"a.go", true}, {"sub/new/file.txt", true}, {".", true}, {"sub/../a.go", true},
		{"..", false}, {"../x", false}, {"sub/../../x", false},
		{"/etc/passwd", false}, {filepath.Join(outsideDir, "secret"), false},
		{"link", false}, {"dirlink/new.txt", false}, {filepath.Join(root, "a.go"), true},
	} {
		p, err := env.Resolve(c.path)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", c.path, err)
		}
		if p.Inside != c.inside {
			t.Errorf("Resolve(%q) = %+v: inside %v, want %v", c.path, p, p.Inside, c.inside)
		}
	}
	if _, err := env.Resolve(""); err == nil {
		t.Error("empty path accepted")
	}
}

func TestTruncate(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		b.WriteString("line of output\n")
	}
	s := b.String()
	out, cut := Truncate(s, 1000, "read more")
	if !cut || len(out) > 1200 {
		t.Fatalf("cut=%v len=%d", cut, len(out))
	}
	if !strings.HasPrefix(out, "line of output\n") || !strings.HasSuffix(out, "line of output\n") || !strings.Contains(out, "omitted") || !strings.Contains(out, "read more") {
		t.Fatalf("truncated output lacks head, tail or note:\n%s", out)
	}
	if same, cut := Truncate("short", 1000, ""); cut || same != "short" {
		t.Fatal("short output was cut")
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		glob, path string
		want       bool
	}{
		{"**/*.go", "main.go", true}, {"**/*.go", "a/b/c.go", true}, {"*.go", "a/b.go", false},
		{"src/**", "src/x/y", true}, {"*.{js,ts}", "a.ts", true}, {"*.{js,ts}", "a.go", false}, {"a?c", "abc", true},
	} {
		re, err := globRegexp(c.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := re.MatchString(c.path); got != c.want {
			t.Errorf("glob %q on %q = %v, want %v", c.glob, c.path, got, c.want)
		}
	}
}
