package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/crow-acp/crow-acp/"

// rules says, for each package of the module, which of the module's packages
// its non-test code may import. A pattern ending in "/..." matches a package
// and everything below it. A package takes the rule of the longest pattern
// that matches it; a package no rule matches fails the test, so that a new
// package is placed on the map (docs/development.md) when it is made.
var rules = map[string][]string{
	// Leaves: import nothing of ours.
	"internal/syncbuf/...":  nil,
	"internal/termsafe/...": nil,
	"internal/secret/...":   nil,
	"internal/deflate/...":  nil,
	"internal/origin/...":   nil,
	"internal/safegit/...":  nil,
	"internal/gitignore":    nil,
	"internal/migrations":   nil,
	"internal/layout":       nil,
	"internal/acptest":      nil,
	"internal/imagecheck":   nil,
	"acp":                   nil, // the wire; the one package meant for other modules

	"internal/persistence":                  {"internal/deflate"},
	"internal/persistence/internal/sqlcore": {"internal/persistence", "internal/migrations"},
	"internal/persistence/sqlite":           {"internal/persistence", "internal/persistence/internal/sqlcore", "internal/migrations"},
	"internal/persistence/postgres/...":     {"internal/persistence", "internal/persistence/internal/sqlcore", "internal/migrations"},
	"internal/persistence/backend":          {"internal/persistence", "internal/persistence/internal/sqlcore", "internal/persistence/sqlite", "internal/persistence/postgres"},
	"internal/persistence/projection":       {"internal/persistence"},
	"internal/persistence/storecopy":        {"internal/persistence"},
	"internal/persistence/persistencetest":  {"internal/persistence", "internal/persistence/projection", "internal/migrations"},

	"internal/provider":           {"internal/origin", "internal/secret"},
	"internal/provider/fakemodel": nil,
	"internal/compaction":         {"internal/imagecheck", "internal/persistence", "internal/provider"},
	"internal/framelog":           {"acp", "internal/persistence", "internal/deflate", "internal/secret"},
	"internal/fixture":            {"internal/acptest", "internal/syncbuf"},

	"internal/checkpoint": {"internal/persistence", "internal/safegit", "internal/termsafe"},

	"internal/agent/prompt":  {"internal/safegit", "internal/termsafe"},
	"internal/agent/request": {"acp", "internal/agent/prompt", "internal/agent/tool", "internal/compaction", "internal/persistence", "internal/provider", "internal/termsafe"},
	"internal/agent/tool":    {"acp", "internal/gitignore", "internal/imagecheck", "internal/origin", "internal/provider"},
	"internal/agent/...": {"acp", "internal/agent/...", "internal/checkpoint", "internal/compaction", "internal/imagecheck", "internal/persistence",
		"internal/provider", "internal/secret", "internal/termsafe"},

	// Commands sit on top and may import the layers below, never each
	// other, and never a test-support package unless named here.
	"cmd/crow-acp": {"acp", "cmd/crow-acp/internal/...", "internal/agent/...", "internal/checkpoint", "internal/framelog",
		"internal/persistence", "internal/persistence/backend", "internal/secret", "internal/termsafe"},
	"cmd/crow-acp/internal/transcript": {"internal/agent", "internal/persistence", "internal/termsafe"},
	"cmd/crow-acp/internal/terminal":   {"acp", "cmd/crow-acp/internal/transcript", "internal/termsafe"},
	"cmd/crow-acp/internal/chat": {"acp", "cmd/crow-acp/internal/terminal", "cmd/crow-acp/internal/transcript",
		"internal/gitignore", "internal/persistence", "internal/termsafe"},
	"cmd/crow-acp/internal/config": {"acp", "internal/agent/...", "internal/compaction", "internal/imagecheck", "internal/persistence/...",
		"internal/provider", "internal/secret"},
	"cmd/crow-acp/internal/doctor": {"cmd/crow-acp/internal/config", "cmd/crow-acp/internal/transcript",
		"internal/agent", "internal/agent/request", "internal/compaction", "internal/persistence/...", "internal/provider"},
	"cmd/crow-acp/internal/sessions": {"cmd/crow-acp/internal/config", "cmd/crow-acp/internal/transcript",
		"internal/agent", "internal/checkpoint", "internal/persistence/...", "internal/termsafe"},
	"cmd/crow-acp/internal/permissions": {"cmd/crow-acp/internal/config", "cmd/crow-acp/internal/sessions",
		"cmd/crow-acp/internal/transcript", "internal/persistence/...", "internal/termsafe"},
	"cmd/crow-acp/internal/crowtest": {"acp", "internal/fixture", "internal/persistence/...", "internal/provider/fakemodel"},
	"cmd/crow-acp/e2e":               nil, // tests only
	"cmd/crow-bench/...": {"acp", "internal/persistence", "internal/persistence/backend",
		"internal/persistence/persistencetest", "internal/provider/fakemodel"},
	"cmd/crow-demo":                {"acp", "internal/provider/fakemodel"},
	"cmd/crow-soak":                {"acp", "internal/provider/fakemodel", "internal/syncbuf"},
	"cmd/fake-model":               {"internal/provider/fakemodel"},
	"cmd/crow-release":             nil,
	"packaging/...":                nil,
	"testdata/mcpserver":           nil,
	"internal/deflate/deflatetest": nil,
}

// ruleFor returns the rule of the longest pattern matching pkg.
func ruleFor(pkg string) (pattern string, allowed []string, ok bool) {
	for p, a := range rules {
		if matches(p, pkg) && len(p) > len(pattern) {
			pattern, allowed, ok = p, a, true
		}
	}
	return pattern, allowed, ok
}

func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// imports reads the module's packages and the module-internal imports of
// their non-test files, by directory relative to the module root.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" && !strings.HasSuffix(path, "/testdata") || name == "bin" || name == "dist" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if _, seen := out[pkg]; !seen {
			out[pkg] = nil
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPackagesImportOnlyWhatTheirRuleAllows(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	pkgs := imports(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("found only %d packages under %s", len(pkgs), root)
	}
	for pkg, deps := range pkgs {
		if pkg == "testdata/mcpserver" || strings.HasPrefix(pkg, "testdata/") {
			continue
		}
		pattern, allowed, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("%s has no rule: add it to rules and to the map in docs/development.md", pkg)
			continue
		}
		for _, dep := range deps {
			if dep == pkg || slices.ContainsFunc(allowed, func(a string) bool { return matches(a, dep) }) {
				continue
			}
			t.Errorf("%s imports %s, which its rule (%q) does not allow", pkg, dep, pattern)
		}
	}
}

// TestRuleCatchesAnUpwardImport shows the check can fail: persistence
// importing the agent is refused.
func TestRuleCatchesAnUpwardImport(t *testing.T) {
	_, allowed, ok := ruleFor("internal/persistence")
	if !ok {
		t.Fatal("no rule for internal/persistence")
	}
	if slices.ContainsFunc(allowed, func(a string) bool { return matches(a, "internal/agent") }) {
		t.Fatal("persistence may import the agent")
	}
	if _, _, ok := ruleFor("internal/nosuchpackage"); ok {
		t.Fatal("an unknown package matched a rule")
	}
}

// TestEveryPackageIsOnTheMap checks docs/development.md names every
// package directory.
func TestEveryPackageIsOnTheMap(t *testing.T) {
	root, _ := filepath.Abs("../..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range imports(t, root) {
		if strings.HasPrefix(pkg, "testdata/") {
			continue
		}
		if !strings.Contains(string(doc), pkg+"/") {
			t.Errorf("docs/development.md does not name %s/", pkg)
		}
	}
}

// TestEveryPackageHasADoc: a newcomer reads what a package holds from its
// package comment (go doc).
func TestEveryPackageHasADoc(t *testing.T) {
	root, _ := filepath.Abs("../..")
	documented := map[string]bool{}
	fset := token.NewFileSet()
	for pkg := range imports(t, root) {
		documented[pkg] = false
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if _, ok := documented[pkg]; !ok || documented[pkg] {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		documented[pkg] = f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+f.Name.Name) ||
			f.Doc != nil && f.Name.Name == "main"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg, ok := range documented {
		if !ok && !strings.HasPrefix(pkg, "testdata/") {
			t.Errorf("%s has no package comment (\"Package NAME ...\", or a comment on package main)", pkg)
		}
	}
}
