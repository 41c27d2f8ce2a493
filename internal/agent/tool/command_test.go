package tool

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// ruleEnv is a workspace (with the links of workspace()) and the rules a
// user gave: always allow ls, cat, echo, grep, cd and git status.
func ruleEnv(t testing.TB) (*Env, string, map[string]bool) {
	root, _ := workspace(t)
	env := &Env{Roots: ResolveRoots([]string{root})}
	rules := map[string]bool{"command:ls": true, "command:cat": true, "command:echo": true,
		"command:grep": true, "command:cd": true, "command:git status": true}
	return env, env.Roots[0], rules
}

// covered: the line runs without asking under rules.
func covered(env *Env, line string, rules map[string]bool) bool {
	cl := parseCommandLine(env, line)
	if cl.Unsafe != "" || len(cl.Keys) == 0 {
		return false
	}
	for _, k := range cl.Keys {
		if !rules[k] {
			return false
		}
	}
	return true
}

// issue13Bypasses are the lines of issue 13 case 1: each starts with an
// allowed program but runs something no rule covers.
var issue13Bypasses = []string{
	"ls; touch /elsewhere/p",
	"ls && touch /elsewhere/p",
	"ls || touch p",
	"ls $(touch /elsewhere/p)",
	"ls `touch /elsewhere/p`",
	"ls \"$(touch p)\"",
	"ls > /elsewhere/f",
	"ls >> ../f",
	"ls | sh",
	"ls | bash -c 'touch p'",
	"ls &",
	"ls & touch p",
	"ls\ntouch /elsewhere/p",
	"$(touch p)",
	"(touch p)",
	">f touch p",
	">f",
	"ls <(touch p)",
	"ls >(touch p)",
	"ls &> f",
	"ls |& cat",
	"eval ls",
	"sh -c ls",
	"ls | xargs rm",
	"env rm -rf x",
	"PATH=/tmp ls",
	"LD_PRELOAD=/tmp/x.so ls",
	"cd /tmp && ls > f",
	"ls > out/f",
	"ls > dangling",
	"ls > ~/f",
	"ls > ~root/f",
	"ls > .git/hooks/pre-commit",
	"ls $((1+2))",
	"ls ${x:-$(touch p)}",
	"git -c core.fsmonitor='touch p' status",
	"git status; git push",
	"git $(echo push)",
	"cat <<EOF\n$(touch p)\nEOF",
	"for PATH in /tmp; do ls; done",
	"for f in $(touch p); do ls; done",
	"case $(touch p) in x) ls;; esac",
	"if touch p; then ls; fi",
	"ls() { touch p; }; ls",
	"\"\"",
	"'' ls",
	"l\\s",
	"find . -exec touch p ;",
	"ls\r; touch p",
	"echo x > /dev/tcp/1.2.3.4/80",
	"ls 2>&$x",
	"coproc ls",
	"time touch p",
	"command touch p",
	"exec touch p",
	". ./evil.sh",
	"ls ${!x}",
	"[[ $(touch p) ]]",
}

func TestCommandRuleBypasses(t *testing.T) {
	env, _, rules := ruleEnv(t)
	for _, line := range issue13Bypasses {
		if covered(env, line, rules) {
			t.Errorf("%q runs without asking under rules for ls, cat, echo, grep, cd and git status", line)
		}
	}
	// The empty-program rule the old matcher created for "(cd sub && ls)"
	// cannot cover anything.
	for _, line := range []string{"$(touch p)", "(touch p)", ">f touch p", "(cd sub && ls)", "", "\"\" x"} {
		if covered(env, line, map[string]bool{"command:": true}) {
			t.Errorf("%q is covered by the empty-program rule", line)
		}
	}
	for _, line := range []string{
		"ls", "ls -la sub", "ls | grep x", "ls && cat a.go", "cat a.go > sub/copy.txt", "ls 2>&1",
		"ls > /dev/null 2>&1", "git status --short", "echo \"$HOME\"", "cat < a.go", "(ls)", "{ ls; cat x; }",
		"for f in a b; do cat \"$f\"; done", "if ls x; then echo yes; else echo no; fi", "ls\ncat x",
		"cat <<'EOF'\n$(not run)\nEOF",
	} {
		if !covered(env, line, rules) {
			t.Errorf("%q is not covered: %s", line, parseCommandLine(env, line).Unsafe)
		}
	}
}

// Every rule key names a program; no line yields an empty one.
func TestCommandRuleKeys(t *testing.T) {
	env, _, _ := ruleEnv(t)
	for line, want := range map[string]string{
		"go test ./...":           "command:go test",
		"go vet ./... && go test": "command:go vet command:go test",
		"npm run build | cat":     "command:npm run command:cat",
		"ls; ls -l":               "command:ls",
		"'ls' x":                  "command:ls",
		"./build.sh":              "command:./build.sh",
	} {
		cl := parseCommandLine(env, line)
		if got := strings.Join(cl.Keys, " "); got != want || cl.Unsafe != "" {
			t.Errorf("%q: keys %q (unsafe %q), want %q", line, got, cl.Unsafe, want)
		}
	}
	for _, line := range []string{"", " ", "\"\"", "$(x)", ">f", "x=1"} {
		cl := parseCommandLine(env, line)
		for _, k := range cl.Keys {
			if strings.TrimSpace(strings.TrimPrefix(k, "command:")) == "" {
				t.Errorf("%q yields the empty-program key %q", line, k)
			}
		}
		if cl.Unsafe == "" {
			t.Errorf("%q is coverable", line)
		}
	}
}

// FuzzCommandRule: no line a rule set does not fully cover is approved. The
// oracle is independent of the matcher: it walks every node of the line
// (parsed as POSIX sh and as bash) with syntax.Walk instead of descending
// the constructs the matcher knows, and checks redirect targets by
// following symlinks itself.
func FuzzCommandRule(f *testing.F) {
	for _, s := range issue13Bypasses {
		f.Add(s)
	}
	for _, s := range []string{
		"ls \x00 x", "ls \x1b[31m", "ls\x07", "ls \xff\xfe", "\xc3\x28 ls", "ls; \x7f",
		strings.Repeat("ls; ", 5000), strings.Repeat("(", 1000) + "ls" + strings.Repeat(")", 1000),
		"ls " + strings.Repeat("a", 1<<16), "cat a > sub/b", "git status", "echo \"$x\" > sub/up/f",
		"ls ${0}", "ls ${10} $1 ${@} ${#} ${?}", "ls ${#x} ${x:-y} ${!x}",
	} {
		f.Add(s)
	}
	env, root, rules := ruleEnv(f)
	programs := map[string]bool{"ls": true, "cat": true, "echo": true, "grep": true, "cd": true, "git": true}
	// A parameter as it is, braced or not: a name, a positional
	// parameter (braced: any number; ${0} is $0) or a special one.
	simpleParam := regexp.MustCompile(`^\$(\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])$`)
	unquote := func(w *syntax.Word) string {
		s := describeWord(w)
		return strings.NewReplacer(`"`, "", `'`, "").Replace(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if !covered(env, line, rules) {
			return
		}
		for _, lang := range []syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash} {
			file, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(line), "")
			if err != nil {
				t.Fatalf("%q approved but does not parse as %s: %v", line, lang, err)
			}
			syntax.Walk(file, func(n syntax.Node) bool {
				switch x := n.(type) {
				case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp, *syntax.FuncDecl, *syntax.CoprocClause,
					*syntax.DeclClause, *syntax.LetClause, *syntax.TestClause, *syntax.ArithmCmd, *syntax.TimeClause:
					t.Fatalf("%q approved with a %T", line, n)
				case *syntax.Stmt:
					if x.Background || x.Coprocess || x.Disown {
						t.Fatalf("%q approved with a background job", line)
					}
				case *syntax.ParamExp:
					if s := describeWord(&syntax.Word{Parts: []syntax.WordPart{x}}); !simpleParam.MatchString(s) {
						t.Fatalf("%q approved with the expansion %s", line, s)
					}
				case *syntax.CallExpr:
					if len(x.Assigns) > 0 || len(x.Args) == 0 {
						t.Fatalf("%q approved with an assignment", line)
					}
					prog := unquote(x.Args[0])
					if !programs[prog] {
						t.Fatalf("%q approved running %q", line, prog)
					}
					if prog == "git" && (len(x.Args) < 2 || unquote(x.Args[1]) != "status") {
						t.Fatalf("%q approved a git command other than status", line)
					}
				case *syntax.Redirect:
					if x.Word == nil || x.Op == syntax.Hdoc || x.Op == syntax.DashHdoc {
						return true
					}
					target := unquote(x.Word)
					if x.Op == syntax.DplIn || x.Op == syntax.DplOut || target == "/dev/null" {
						return true
					}
					if !filepath.IsAbs(target) {
						target = filepath.Join(root, target)
					}
					if real := realLocation(target); !inside(root, real) {
						t.Fatalf("%q approved a redirection to %s", line, real)
					}
				}
				return true
			})
		}
	})
}
