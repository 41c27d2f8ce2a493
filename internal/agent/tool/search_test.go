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
