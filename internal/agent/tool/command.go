package tool

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// commandLine is a run_command line as the shell will run it, parsed with
// mvdan.cc/sh/v3/syntax: what an "always allow" rule must cover for the line
// to run without asking.
type commandLine struct {
	// Commands are the line's simple commands as written, for the
	// permission request to show.
	Commands []string
	// Keys are the rule keys the line needs, one per distinct command:
	// "command:PROG", or "command:PROG SUB" for tools whose subcommands do
	// different things (git, go, npm, cargo…).
	Keys []string
	// Unsafe says why no rule can cover the line (it cannot be parsed, runs
	// a command it does not name, writes outside the workspace…); such a
	// line is asked about every time.
	Unsafe string
}

// maxRuleLine bounds the lines the matcher parses; a longer one is asked
// about every time.
const maxRuleLine = 8 << 10

// multiCommandTools are programs whose first argument is a subcommand that
// does something else entirely (`git status` and `git push`): a rule covers
// one subcommand.
var multiCommandTools = map[string]bool{
	"git": true, "go": true, "npm": true, "pnpm": true, "yarn": true, "npx": true, "cargo": true,
	"docker": true, "podman": true, "kubectl": true, "gh": true, "pip": true, "pip3": true, "uv": true,
	"bun": true, "deno": true, "dotnet": true, "rustup": true, "poetry": true, "terraform": true,
	"brew": true, "apt": true, "apt-get": true, "systemctl": true, "helm": true, "composer": true,
	"bundle": true, "gem": true, "mix": true, "swift": true, "zig": true, "nix": true, "conda": true,
}

// indirectPrograms run a command named by their arguments (or change how
// the next one runs): a rule for them would cover anything.
var indirectPrograms = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true, "command": true, "builtin": true, "trap": true,
	"alias": true, "fc": true, "sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true,
	"mksh": true, "fish": true, "csh": true, "tcsh": true, "busybox": true, "xargs": true, "env": true,
	"sudo": true, "doas": true, "su": true, "runuser": true, "nohup": true, "nice": true, "ionice": true,
	"timeout": true, "watch": true, "parallel": true, "setsid": true, "chroot": true, "stdbuf": true,
	"script": true, "time": true, "strace": true, "ltrace": true, "unbuffer": true, "flock": true,
	"chrt": true, "taskset": true, "firejail": true, "coproc": true, "export": true, "set": true,
	"unset": true, "readonly": true, "local": true, "declare": true, "typeset": true, "hash": true,
	"enable": true, "shopt": true, "ulimit": true, "umask": true,
}

// findActions are find's arguments that run commands or change files.
var findActions = map[string]bool{"-exec": true, "-execdir": true, "-ok": true, "-okdir": true, "-delete": true,
	"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true}

// parseCommandLine parses line as `sh -c` would run it in env's first root.
// It is parsed twice, as POSIX sh and as bash (sh is bash on some systems):
// both readings must be coverable and need the same rules.
func parseCommandLine(env *Env, line string) commandLine {
	if len(line) > maxRuleLine {
		return commandLine{Unsafe: fmt.Sprintf("the line is over %d KiB, too long to check", maxRuleLine>>10)}
	}
	for _, r := range line {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f {
			return commandLine{Unsafe: "the line contains control characters"}
		}
	}
	// An unsafe line needs no keys: no rule applies to it either way.
	posix := checkLine(env, line, syntax.LangPOSIX)
	if posix.Unsafe != "" {
		return commandLine{Commands: posix.Commands, Unsafe: posix.Unsafe}
	}
	bash := checkLine(env, line, syntax.LangBash)
	if bash.Unsafe != "" {
		return commandLine{Commands: posix.Commands, Unsafe: bash.Unsafe}
	}
	if strings.Join(bash.Keys, "\x00") != strings.Join(posix.Keys, "\x00") {
		return commandLine{Commands: posix.Commands, Unsafe: "sh and bash read the line differently"}
	}
	return posix
}

func checkLine(env *Env, line string, lang syntax.LangVariant) commandLine {
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(line), "")
	if err != nil {
		return commandLine{Unsafe: fmt.Sprintf("the line cannot be parsed as a shell command (%v)", err)}
	}
	c := &lineChecker{env: env, seen: map[string]bool{}}
	c.stmts(f.Stmts)
	if len(c.out.Keys) == 0 {
		c.unsafe("the line runs no command")
	}
	if c.cwdChanged && len(c.targets) > 0 {
		c.unsafe("the line changes directory and redirects to a file, which may then be anywhere")
	}
	for _, t := range c.targets {
		if t == "/dev/null" || t == "/dev/stdout" || t == "/dev/stderr" {
			continue
		}
		p, err := env.Resolve(t)
		switch {
		case err != nil:
			c.unsafe("the line redirects to %s, which cannot be resolved", t)
		case !p.Inside:
			c.unsafe("the line redirects to %s, outside the workspace", t)
		case p.Protected:
			c.unsafe("the line redirects to %s, a protected file", t)
		}
	}
	return c.out
}

type lineChecker struct {
	env        *Env
	out        commandLine
	seen       map[string]bool
	targets    []string // file redirection targets
	cwdChanged bool     // cd, pushd or popd: relative targets may be anywhere
}

func (c *lineChecker) unsafe(format string, args ...any) {
	if c.out.Unsafe == "" {
		c.out.Unsafe = fmt.Sprintf(format, args...)
	}
}

func (c *lineChecker) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		c.stmt(s)
	}
}

func (c *lineChecker) stmt(s *syntax.Stmt) {
	if s.Background || s.Coprocess || s.Disown {
		c.unsafe("the line starts a background job")
	}
	for _, r := range s.Redirs {
		c.redirect(r)
	}
	switch x := s.Cmd.(type) {
	case nil:
		c.unsafe("the line has a redirection without a command")
	case *syntax.CallExpr:
		c.call(x)
	case *syntax.BinaryCmd:
		if x.Op != syntax.AndStmt && x.Op != syntax.OrStmt && x.Op != syntax.Pipe {
			c.unsafe("the line uses %s", x.Op)
		}
		c.stmt(x.X)
		c.stmt(x.Y)
	case *syntax.Block:
		c.stmts(x.Stmts)
	case *syntax.Subshell:
		c.stmts(x.Stmts)
	case *syntax.IfClause:
		for ic := x; ic != nil; ic = ic.Else {
			c.stmts(ic.Cond)
			c.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		c.stmts(x.Cond)
		c.stmts(x.Do)
	case *syntax.ForClause:
		wi, ok := x.Loop.(*syntax.WordIter)
		if !ok || x.Select || !plainVarName(wi.Name.Value) {
			c.unsafe("the line has a loop rules cannot check")
		} else {
			for _, w := range wi.Items {
				c.word(w)
			}
		}
		c.stmts(x.Do)
	case *syntax.CaseClause:
		c.word(x.Word)
		for _, it := range x.Items {
			for _, p := range it.Patterns {
				c.word(p)
			}
			c.stmts(it.Stmts)
		}
	default:
		c.unsafe("the line uses a shell construct rules do not cover (%T)", s.Cmd)
	}
}

// plainVarName: a loop variable that cannot change how commands are found
// or run (PATH, IFS, LD_PRELOAD… are upper case).
func plainVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (c *lineChecker) call(x *syntax.CallExpr) {
	if len(x.Assigns) > 0 {
		c.unsafe("the line sets variables, which can change what a command runs")
	}
	if len(x.Args) == 0 {
		c.unsafe("the line has an assignment without a command")
		return
	}
	for _, w := range x.Args {
		c.word(w)
	}
	prog, ok := literal(x.Args[0])
	switch {
	case !ok:
		c.unsafe("a program name is computed, not written out")
		return
	case prog == "":
		c.unsafe("a program name is empty")
		return
	case strings.ContainsAny(prog, "*?[~"):
		c.unsafe("the program name %q is a pattern", prog)
		return
	}
	name := path.Base(prog)
	if indirectPrograms[name] {
		c.unsafe("`%s` runs other commands or changes how they run", name)
	}
	switch name {
	case "cd", "pushd", "popd":
		c.cwdChanged = true
	case "find":
		for _, w := range x.Args[1:] {
			if lit, ok := literal(w); !ok || findActions[lit] {
				c.unsafe("find with -exec, -delete or a computed argument runs or changes more than find")
			}
		}
	}
	key := prog
	if multiCommandTools[name] && len(x.Args) > 1 {
		sub, ok := literal(x.Args[1])
		if !ok || sub == "" || strings.HasPrefix(sub, "-") || strings.HasPrefix(sub, "+") || strings.ContainsAny(sub, "*?[~=") {
			c.unsafe("`%s` has options or expansions before its subcommand", name)
			return
		}
		key += " " + sub
	}
	c.out.Commands = append(c.out.Commands, printWords(x.Args))
	if k := "command:" + key; !c.seen[k] {
		c.seen[k] = true
		c.out.Keys = append(c.out.Keys, k)
	}
}

func (c *lineChecker) redirect(r *syntax.Redirect) {
	if r.N != nil && !isDigits(r.N.Value) {
		c.unsafe("the line redirects through a variable")
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc != nil {
			c.word(r.Hdoc)
		}
		return
	case syntax.DplIn, syntax.DplOut:
		if t, ok := literal(r.Word); !ok || (t != "-" && !isDigits(t)) {
			c.unsafe("the line redirects to %s", describeWord(r.Word))
		}
		return
	case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.RdrClob:
	default:
		c.unsafe("the line uses the redirection %s", r.Op)
		return
	}
	c.word(r.Word)
	t, ok := literal(r.Word)
	if !ok || t == "" || strings.ContainsAny(t, "*?[~") {
		c.unsafe("the line redirects to a file name that is computed or a pattern")
		return
	}
	c.targets = append(c.targets, t)
}

// word refuses expansions that run commands or do more than substitute a
// variable's value.
func (c *lineChecker) word(w *syntax.Word) {
	if w == nil {
		return
	}
	for _, p := range w.Parts {
		c.wordPart(p)
	}
}

func (c *lineChecker) wordPart(p syntax.WordPart) {
	switch x := p.(type) {
	case *syntax.Lit:
	case *syntax.SglQuoted:
		if x.Dollar {
			c.unsafe("the line uses $'…' quoting")
		}
	case *syntax.DblQuoted:
		for _, q := range x.Parts {
			c.wordPart(q)
		}
	case *syntax.ParamExp:
		if !simpleParam(x) {
			c.unsafe("the line uses a ${…} expansion with an operator")
		}
	case *syntax.CmdSubst:
		c.unsafe("the line uses command substitution")
	case *syntax.ProcSubst:
		c.unsafe("the line uses process substitution")
	case *syntax.ArithmExp:
		c.unsafe("the line uses arithmetic expansion")
	default:
		c.unsafe("the line uses an expansion rules do not cover (%T)", p)
	}
}

func simpleParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Flags == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.Split == syntax.OptUnset && p.GlobSubst == syntax.OptUnset && p.RcExpand == syntax.OptUnset &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// literal is the value of a word that expands to exactly itself: plain and
// quoted text, no backslashes (whose meaning depends on the quoting), no
// expansions.
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	var add func(parts []syntax.WordPart) bool
	add = func(parts []syntax.WordPart) bool {
		for _, p := range parts {
			switch x := p.(type) {
			case *syntax.Lit:
				if strings.ContainsRune(x.Value, '\\') {
					return false
				}
				b.WriteString(x.Value)
			case *syntax.SglQuoted:
				if x.Dollar {
					return false
				}
				b.WriteString(x.Value)
			case *syntax.DblQuoted:
				if x.Dollar || !add(x.Parts) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	if !add(w.Parts) {
		return "", false
	}
	return b.String(), true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func describeWord(w *syntax.Word) string {
	if w == nil {
		return "nothing"
	}
	var b strings.Builder
	_ = syntax.NewPrinter().Print(&b, w)
	return b.String()
}

// printWords shows a simple command as written (quotes kept).
func printWords(ws []*syntax.Word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = describeWord(w)
	}
	s := strings.Join(parts, " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// QuoteArgv is the shell line that runs argv exactly as given, for a
// command sent as an array: a word of plain characters stays as it is,
// any other is single-quoted (a quote in it written '"'"'), which POSIX
// sh and bash read back byte for byte and the rule matcher reads as
// literal text. It fails on a NUL byte, which no argument can hold.
func QuoteArgv(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("the command array is empty")
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errors.New("an argument holds a NUL byte")
		}
		words[i] = quoteWord(a)
	}
	return strings.Join(words, " "), nil
}

func quoteWord(s string) string {
	if s != "" && !syntax.IsKeyword(s) && strings.IndexFunc(s, needsQuote) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// needsQuote: a character the shell may read as more than itself (an
// operator, a quote, an expansion, a glob, whitespace, an assignment's =).
func needsQuote(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("_-./,:@%+", r)
}
