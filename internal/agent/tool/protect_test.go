package tool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plantedRepo are the writes that make a folder a git repository whose
// config runs a command on the next git status (issue 29 finding 3).
var plantedRepo = []struct{ path, content string }{
	{"HEAD", "ref: refs/heads/main\n"},
	{"config", "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = touch PWNED\n"},
	{"objects/info/packs", "\n"},
	{"refs/heads/.keep", ""},
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// Issue 29 finding 3: git takes any folder holding HEAD, config, objects/
// and refs/ for a repository. In every order the four are written (in the
// workspace root or a subfolder), the write that makes the folder a
// repository, and every write after it, asks every time; a project's own
// config file or objects/ folder does not.
func TestPlantedRepositoryAsksInEveryOrder(t *testing.T) {
	for _, order := range permutations(len(plantedRepo)) {
		for _, sub := range []string{"", "vendor/x"} {
			env, root, _ := swapWorkspace(t)
			asked := map[string]string{}
			for _, i := range order {
				w := plantedRepo[i]
				p := filepath.ToSlash(filepath.Join(sub, w.path))
				act := prepareCall(t, writeFile{}, env, map[string]any{"path": p, "content": w.content})
				asked[w.path] = act.AlwaysAsk
				if r := act.Run(context.Background(), nil); r.Failed {
					t.Fatalf("write %s: %s", p, r.Output)
				}
			}
			if asked["HEAD"] == "" || !strings.Contains(asked["HEAD"], "git repository marker") {
				t.Errorf("order %v in %q: writing HEAD did not ask every time (%q)", order, sub, asked["HEAD"])
			}
			// Once HEAD is there, every other marker asks.
			for _, i := range order[indexOf(order, 0)+1:] {
				if asked[plantedRepo[i].path] == "" {
					t.Errorf("order %v in %q: %s written beside HEAD without asking", order, sub, plantedRepo[i].path)
				}
			}
			// The writes did make a repository: the rule guards a real attack.
			dir := filepath.Join(root, sub)
			if out, err := exec.Command("git", "-C", dir, "-c", "safe.bareRepository=all", "rev-parse", "--is-bare-repository").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "true" {
				t.Fatalf("the planted folder is not a bare repository for git: %v %s", err, out)
			}
		}
	}

	// Ordinary project files with these names go without a question.
	env, root, _ := swapWorkspace(t)
	for _, f := range []string{"app/config", "src/objects/shape.go", "docs/refs/index.md"} {
		act := prepareCall(t, writeFile{}, env, map[string]any{"path": f, "content": "x"})
		if act.AlwaysAsk != "" {
			t.Errorf("write %s asks every time: %s", f, act.AlwaysAsk)
		}
		act.Run(context.Background(), nil)
	}
	// A folder with objects/ and refs/ both (the markers of a repository
	// but HEAD) asks for each.
	if err := os.MkdirAll(filepath.Join(root, "app", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"app/config", "app/refs/heads/main"} {
		if act := prepareCall(t, writeFile{}, env, map[string]any{"path": f, "content": "x"}); act.AlwaysAsk == "" {
			t.Errorf("write %s beside objects/ did not ask", f)
		}
	}
	// The always-asked names, whatever their folder and case.
	for _, f := range []string{"a/commondir", "b/gitdir", "c/packed-refs", "d/head"} {
		if act := prepareCall(t, writeFile{}, env, map[string]any{"path": f, "content": "x"}); act.AlwaysAsk == "" {
			t.Errorf("write %s did not ask", f)
		}
	}
	// An edit of an existing marker asks too.
	if err := os.WriteFile(filepath.Join(root, "app", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if act := prepareCall(t, editFile{}, env, map[string]any{"path": "app/config", "old": "x", "new": "y"}); act.AlwaysAsk == "" {
		t.Error("edit of config beside HEAD did not ask")
	}
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// Issue 29 finding 4: crow-acp's own files (here the credentials file of a
// workspace that holds ~/.config) ask before every read, search and write;
// a search of the whole workspace skips them.
func TestOwnFilesAskForReadsAndWrites(t *testing.T) {
	env, root, _ := swapWorkspace(t)
	creds := filepath.Join(root, ".config", "crow-acp", "credentials")
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte("OTHER_API_KEY=sk-other-provider-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.Protected = ResolveRoots([]string{creds})
	rel := ".config/crow-acp/credentials"
	for _, c := range []struct {
		tool Tool
		args map[string]any
	}{
		{readFile{}, map[string]any{"path": rel}},
		{search{}, map[string]any{"pattern": "sk-", "path": rel}},
		{writeFile{}, map[string]any{"path": rel, "content": "OTHER_API_KEY=sk-attacker\n"}},
		{editFile{}, map[string]any{"path": rel, "old": "sk-other", "new": "sk-attacker"}},
	} {
		if act := prepareCall(t, c.tool, env, c.args); !strings.Contains(act.AlwaysAsk, "crow-acp's own files") {
			t.Errorf("%T %v: not asked every time (%q)", c.tool, c.args, act.AlwaysAsk)
		}
	}
	act := prepareCall(t, search{}, env, map[string]any{"pattern": "sk-"})
	if act.AlwaysAsk != "" {
		t.Errorf("a search of the workspace asks every time: %s", act.AlwaysAsk)
	}
	if r := act.Run(context.Background(), nil); strings.Contains(r.Output, "sk-other") {
		t.Fatalf("a search of the workspace read the credentials file:\n%s", r.Output)
	}
	// Other files in the same folder are ordinary.
	if act := prepareCall(t, readFile{}, env, map[string]any{"path": ".config/crow-acp/notes"}); act.AlwaysAsk != "" {
		t.Errorf("an ordinary file asks every time: %s", act.AlwaysAsk)
	}
}

// plantRepo makes dir a git directory whose config runs `touch marker`
// (with git's arguments) on the next git status in or below it, as the
// model could with four writes (issue 29 finding 3).
func plantRepo(t *testing.T, dir, marker string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads", "sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"HEAD":   "ref: refs/heads/main\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = touch " + marker + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 29 finding 3: a planted repository's core.fsmonitor ran from the
// agent's own `git status`. Commands run with safe.bareRepository=explicit,
// so git refuses the folder; a GIT_CONFIG_COUNT pair the user set is kept.
func TestCommandsIgnorePlantedRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	plantRepo(t, filepath.Join(root, "p"), filepath.Join(root, "PWNED"))
	// Without the setting the attack works on this git: the test can fail.
	cmd := exec.Command("git", "-c", "safe.bareRepository=all", "status")
	cmd.Dir = filepath.Join(root, "p", "sub")
	_ = cmd.Run()
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err != nil {
		t.Skip("this git does not run a planted repository's fsmonitor; nothing to guard")
	}
	if err := os.Remove(filepath.Join(root, "PWNED")); err != nil {
		t.Fatal(err)
	}

	for i, childEnv := range [][]string{nil, (EnvPolicy{Inherit: "core"}).Environ(osEnviron()), nil} {
		if i == 2 {
			// A user's own pairs are kept, and ours still apply.
			t.Setenv("GIT_CONFIG_COUNT", "1")
			t.Setenv("GIT_CONFIG_KEY_0", "user.name")
			t.Setenv("GIT_CONFIG_VALUE_0", "Kept Name")
		}
		env := &Env{Roots: ResolveRoots([]string{root}), ChildEnv: childEnv}
		for _, line := range []string{"cd p && git status", "cd p/sub && git status", "cd p && git log"} {
			act := prepareCall(t, runCommand{}, env, map[string]any{"command": line})
			out := act.Run(context.Background(), nil).Output
			if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
				t.Fatalf("%q ran the planted repository's fsmonitor:\n%s", line, out)
			}
			if !strings.Contains(out, "safe.bareRepository") {
				t.Errorf("%q: git did not refuse the planted repository:\n%s", line, out)
			}
		}
	}
	env := &Env{Roots: ResolveRoots([]string{root})}
	act := prepareCall(t, runCommand{}, env, map[string]any{"command": "git config user.name"})
	if out := act.Run(context.Background(), nil).Output; !strings.Contains(out, "Kept Name") {
		t.Errorf("the user's own GIT_CONFIG_COUNT pair was lost:\n%s", out)
	}
	// The client's terminal gets the same variables.
	vars := map[string]string{}
	for _, v := range GitConfigEnv(env.childEnv()) {
		vars[v.Name] = v.Value
	}
	if vars["GIT_CONFIG_COUNT"] != "2" || vars["GIT_CONFIG_KEY_0"] != "user.name" || vars["GIT_CONFIG_KEY_1"] != "safe.bareRepository" || vars["GIT_CONFIG_VALUE_1"] != "explicit" {
		t.Errorf("terminal variables %v", vars)
	}
}
