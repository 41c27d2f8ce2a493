package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func toolOutput(t *testing.T, tl Tool, env *Env, args map[string]any) string {
	t.Helper()
	raw, _ := json.Marshal(args)
	act, err := tl.Prepare(env, raw)
	if err != nil {
		t.Fatal(err)
	}
	res := act.Run(context.Background(), nil)
	if res.Failed {
		t.Fatal(res.Output)
	}
	return res.Output
}

// search and list_files skip what .gitignore files (nested ones too, with
// negation and directory-only patterns) and .git/info/exclude ignore.
func TestSearchHonoursGitignore(t *testing.T) {
	env, _ := patchWorkspace(t, map[string]string{
		".gitignore":        "*.log\nbuild/\n/top.txt\n!keep.log\n",
		".git/info/exclude": "secret*\n",
		"a.go":              "needle\n",
		"x.log":             "needle\n",
		"keep.log":          "needle\n",
		"build/out.go":      "needle\n",
		"top.txt":           "needle\n",
		"sub/top.txt":       "needle\n",
		"secret.txt":        "needle\n",
		"sub/.gitignore":    "gen_*.go\n!x.log\n",
		"sub/gen_a.go":      "needle\n",
		"sub/b.go":          "needle\n",
		"sub/x.log":         "needle\n",
		"sub/build":         "needle\n", // a file, not a directory: build/ does not apply
	})
	out := toolOutput(t, search{}, env, map[string]any{"pattern": "needle", "files_only": true})
	got := strings.Split(out, "\n")
	want := []string{"a.go", "keep.log", "sub/b.go", "sub/build", "sub/top.txt", "sub/x.log"}
	if strings.Join(sortedCopy(got), ",") != strings.Join(want, ",") {
		t.Fatalf("search found %q, want %q", got, want)
	}
	out = toolOutput(t, listFiles{}, env, map[string]any{"pattern": "**/*.go"})
	if out != "a.go\nsub/b.go" {
		t.Fatalf("list_files found %q", out)
	}
}

func TestSearchOptions(t *testing.T) {
	env, _ := patchWorkspace(t, map[string]string{"a.txt": "one\ntwo\nThree\nfour\nfive\nsix\nseven\nthree\n"})
	if out := toolOutput(t, search{}, env, map[string]any{"pattern": "three", "ignore_case": true}); out != "a.txt:3: Three\na.txt:8: three" {
		t.Fatalf("ignore_case: %q", out)
	}
	want := "a.txt-2- two\na.txt:3: Three\na.txt-4- four\n--\na.txt-7- seven\na.txt:8: three"
	if out := toolOutput(t, search{}, env, map[string]any{"pattern": "(?i)three", "context": 1}); out != want {
		t.Fatalf("context: %q, want %q", out, want)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

func FuzzGitignore(f *testing.F) {
	f.Add("*.log\n!keep.log\nbuild/\n/a/**/b\n[a-\n\\#x\n", "a/x/b")
	f.Add("\x00\xff[!]]\n**\n", "\xc3\x28/y")
	f.Add("   \n \n!\n/\n", "x") // lines of spaces crashed the parser
	f.Add(strings.Repeat("a*", 3000), strings.Repeat("a", 5000))
	// Many wildcard-heavy lines against a long path: what a hostile
	// .gitignore would do to make every search crawl (it hung this target).
	f.Add(strings.Repeat(strings.Repeat("*a", 400)+"\n", 4), strings.Repeat("ab/", 400))
	f.Fuzz(func(t *testing.T, text, name string) {
		if len(name) > 4096 { // no path beneath a root is longer (PATH_MAX)
			name = name[:4096]
		}
		ps := parseIgnore(text)
		if len(ps) > strings.Count(text, "\n")+1 {
			t.Fatalf("%d patterns from %d lines", len(ps), strings.Count(text, "\n")+1)
		}
		matchIgnore(ps, name, false)
		matchIgnore(ps, name, true)
	})
}

// TestHostileGitignoreIsBounded: a workspace's .gitignore is untrusted.
// Matching a path costs time in proportion to the wildcards kept (each
// keeps a matcher thread alive along the path), so one file keeps at most
// maxIgnorePatterns patterns and maxIgnoreWildcards wildcards; a run of
// stars counts once.
func TestHostileGitignoreIsBounded(t *testing.T) {
	lines := func(line string, n int) string { return strings.Repeat(line+"\n", n) }
	if ps := parseIgnore(lines(strings.Repeat("*a", 300), 60)); len(ps) != 0 {
		t.Errorf("%d patterns of 300 wildcards each kept, want none (over the file budget)", len(ps))
	}
	if ps := parseIgnore(lines("node_modules", 3000)); len(ps) != maxIgnorePatterns {
		t.Errorf("%d patterns kept of 3,000, want %d", len(ps), maxIgnorePatterns)
	}
	if ps := parseIgnore(lines("*a*", 800)); len(ps) != maxIgnoreWildcards/2 {
		t.Errorf("%d two-wildcard patterns kept, want %d", len(ps), maxIgnoreWildcards/2)
	}
	ps := parseIgnore("a*****b\n")
	if len(ps) != 1 || !ps[0].re.MatchString("aXYb") || ps[0].re.MatchString("a/b") {
		t.Fatalf("a run of stars is not one star: %v", ps)
	}
	if n := strings.Count(ps[0].re.String(), "[^/]*"); n != 1 {
		t.Errorf("a run of five stars became %d wildcards: %s", n, ps[0].re)
	}
}
