package tool

import (
	"os"
	"path/filepath"
	"testing"
)

// A root the client reached through a symlink is checked on its real
// path but spoken of as the client named it (issue 15 item 1).
func TestClientPathKeepsTheClientsRoot(t *testing.T) {
	real, _ := filepath.EvalSymlinks(t.TempDir())
	link := filepath.Join(t.TempDir(), "proj")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	roots := []string{link}
	env := &Env{Roots: ResolveRoots(roots), ClientRoots: ClientRoots(roots)}
	for in, want := range map[string]string{
		"a.txt":                         filepath.Join(link, "a.txt"),
		filepath.Join(link, "b/c.go"):   filepath.Join(link, "b/c.go"),
		filepath.Join(real, "d.txt"):    filepath.Join(link, "d.txt"),
		filepath.Join(outside, "e.txt"): "",
		filepath.Join(link, "../x.txt"): "",
	} {
		p, err := env.Resolve(in)
		if err != nil {
			t.Fatal(err)
		}
		if p.Client != want {
			t.Errorf("Resolve(%q).Client = %q, want %q (Abs %q)", in, p.Client, want, p.Abs)
		}
		if want != "" && (p.ClientPath() != want || !p.Inside) {
			t.Errorf("Resolve(%q): ClientPath %q, Inside %v", in, p.ClientPath(), p.Inside)
		}
		if want == "" && p.ClientPath() != p.Abs {
			t.Errorf("Resolve(%q): an outside path is shown as %q, want its real path %q", in, p.ClientPath(), p.Abs)
		}
	}
}
