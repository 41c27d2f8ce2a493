package tool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workspace builds a root with the links an attacker (a model, a cloned
// repository) could plant, next to an outside directory with a secret.
func workspace(t testing.TB) (root, outside string) {
	base := t.TempDir()
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	root = filepath.Join(base, "proj")
	outside = filepath.Join(base, "proj-outside") // shares the root's name as a prefix
	for _, d := range []string{root, filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"out":        outside,                              // a directory outside
		"sub/up":     "..",                                 // inside, relative
		"sub/upup":   "../..",                              // outside, relative
		"dangling":   filepath.Join(outside, "new.txt"),    // a file about to be created outside
		"dangdir":    filepath.Join(outside, "nodir", "x"), // under a missing outside directory
		"chain1":     "chain2",
		"chain2":     "out/secret",
		"loop":       "loop",
		"sub/relout": "../../proj-outside/secret",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

// realLocation is where a write to p would really land: the symlinks of p
// followed as the kernel does, including a last component that dangles.
func realLocation(p string) string {
	for i := 0; i < 40; i++ {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			p = target
			continue
		}
		if err == nil {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return r
			}
			return p
		}
		// p does not exist: its parent decides.
		return filepath.Join(realLocation(filepath.Dir(p)), filepath.Base(p))
	}
	return p
}

func inside(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

func TestResolveAttacks(t *testing.T) {
	root, outside := workspace(t)
	e := &Env{Roots: ResolveRoots([]string{root})}
	cases := map[string]bool{ // path -> inside
		// A name too long to look up, behind a link to outside: the link
		// cannot be followed, so the path is refused, not called inside
		// (found by FuzzResolve).
		"out/" + strings.Repeat("x", 300): false,
		"a.go":                            true,
		"sub/../a.go":                     true,
		"sub/up/a.go":                     true,
		"../proj-outside/secret":          false,
		outside + "/secret":               false,
		root + "-outside/secret":          false,
		"out/secret":                      false,
		"out":                             false,
		"sub/upup/proj-outside":           false,
		"dangling":                        false, // a write would create a file outside
		"dangdir":                         false,
		"chain1":                          false,
		"sub/relout":                      false,
		"./././a.go":                      true,
		"sub//..//..//proj/a.go":          true,
		"/":                               false,
		root:                              true,
		root + "/../proj-outside":         false,
		strings.Repeat("sub/up/", 30):     true,
	}
	for p, want := range cases {
		got, err := e.Resolve(p)
		if err != nil {
			if want {
				t.Errorf("%q: %v", p, err)
			}
			continue
		}
		if got.Inside != want {
			t.Errorf("%q: inside %v, want %v (resolved to %s)", p, got.Inside, want, got.Abs)
		}
		if got.Inside && !inside(root, realLocation(got.Abs)) {
			t.Errorf("%q: called inside, but a write lands at %s", p, realLocation(got.Abs))
		}
	}
	for _, p := range []string{"", "a\x00b", "~/x"} {
		if _, err := e.Resolve(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	if _, err := e.Resolve("loop"); err != nil {
		t.Logf("loop: %v", err)
	}
}

// FuzzResolve: whatever path the model names, a path called inside really
// is inside once every symlink is followed.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a.go", "../x", "out/secret", "dangling", "sub/upup/proj-outside/secret", "chain1", "loop/x", "/etc/passwd", "sub/relout"} {
		f.Add(s)
	}
	root, _ := workspace(f)
	e := &Env{Roots: ResolveRoots([]string{root})}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := e.Resolve(p)
		if err != nil || !got.Inside {
			return
		}
		if real := realLocation(got.Abs); !inside(root, real) {
			t.Fatalf("%q: called inside, but it is %s", p, real)
		}
	})
}

// A search of the workspace must not read files outside it through
// symlinks planted inside (grep -r and ripgrep skip them too): the search
// of "." needs no permission, so following one would leak the file.
func TestSearchDoesNotFollowSymlinksOut(t *testing.T) {
	root, outside := workspace(t)
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("TOPSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "direct")); err != nil {
		t.Fatal(err)
	}
	e := &Env{Roots: ResolveRoots([]string{root})}
	a, err := search{}.Prepare(e, []byte(`{"pattern":"TOPSECRET","path":"."}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Outside) != 0 {
		t.Fatalf("searching . asks for outside access: %v", a.Outside)
	}
	if r := a.Run(context.Background(), nil); strings.Contains(r.Output, "TOPSECRET") {
		t.Fatalf("search read a file outside the workspace through a symlink:\n%s", r.Output)
	}
}
