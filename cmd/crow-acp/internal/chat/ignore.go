package chat

import (
	"io"
	"os"
	"path"
	"regexp"
	"strings"
)

// The gitignore(5) rules @-completion honours, so that build output,
// dependencies and caches are not offered: a .gitignore in each directory
// (patterns relative to it, deeper files overriding shallower ones) and
// .git/info/exclude at the root, with "!" negation, "/" anchoring, a
// trailing "/" for directories, "*", "?", "[...]", "**" and backslash
// escapes. The agent's tools have their own matcher (internal/agent/tool,
// unexported); this one serves the chat, which is a client of the agent.

// Bounds of what is read of an ignore file, which is the workspace's and so
// untrusted: its size, a pattern's length, the patterns and wildcards kept
// (each wildcard keeps a regexp thread alive: matching stays linear).
const (
	maxIgnoreFile      = 256 << 10
	maxIgnorePattern   = 1 << 10
	maxIgnorePatterns  = 1000
	maxIgnoreWildcards = 256
)

type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// parseIgnore compiles one ignore file's lines; a line it cannot read is
// skipped, as git does.
func parseIgnore(text string) []ignoreRule {
	var out []ignoreRule
	wildcards := 0
	for _, line := range strings.Split(text, "\n") {
		if len(out) == maxIgnorePatterns {
			break
		}
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' || len(line) > maxIgnorePattern {
			continue
		}
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		anchored := strings.Contains(line, "/")
		expr, n, ok := globRegexp(strings.TrimPrefix(line, "/"))
		if !ok || wildcards+n > maxIgnoreWildcards {
			continue
		}
		wildcards += n
		if anchored {
			expr = "^" + expr + "$"
		} else {
			expr = "^(?:.*/)?" + expr + "$"
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			continue
		}
		r.re = re
		out = append(out, r)
	}
	return out
}

// globRegexp translates one gitignore glob and counts its wildcards; ok is
// false for a glob git would not read (an unclosed class).
func globRegexp(g string) (expr string, wildcards int, ok bool) {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		case strings.HasPrefix(g[i:], "**/") && (i == 0 || g[i-1] == '/'):
			b.WriteString("(?:.*/)?")
			i += 2
			wildcards++
		case g[i:] == "**" && (i == 0 || g[i-1] == '/'):
			b.WriteString(".*")
			i++
			wildcards++
		case c == '*':
			for i+1 < len(g) && g[i+1] == '*' {
				i++
			}
			b.WriteString("[^/]*")
			wildcards++
		case c == '?':
			b.WriteString("[^/]")
			wildcards++
		case c == '[':
			j := i + 1
			if j < len(g) && (g[j] == '!' || g[j] == '^') {
				j++
			}
			if j < len(g) && g[j] == ']' {
				j++
			}
			for j < len(g) && g[j] != ']' {
				j++
			}
			if j >= len(g) {
				return "", 0, false
			}
			class := g[i+1 : j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			class = strings.ReplaceAll(class, `\`, `\\`)
			class = strings.ReplaceAll(class, `[`, `\[`)
			b.WriteString("[" + class + "]")
			wildcards++
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		}
	}
	return b.String(), wildcards, true
}

// decide reports whether rules decide rel (slash-separated, relative to
// their file's directory), and if so whether it is ignored: the last
// matching line wins.
func decide(rules []ignoreRule, rel string, isDir bool) (matched, ignored bool) {
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.re.MatchString(rel) {
			return true, !r.negate
		}
	}
	return false, false
}

// ignorer answers beneath a root, reading each directory's .gitignore once.
type ignorer struct {
	root *os.Root
	dirs map[string][]ignoreRule
}

func newIgnorer(root *os.Root) *ignorer {
	return &ignorer{root: root, dirs: map[string][]ignoreRule{}}
}

func (ig *ignorer) rules(dir string) []ignoreRule {
	if rs, ok := ig.dirs[dir]; ok {
		return rs
	}
	var rs []ignoreRule
	if dir == "." {
		rs = parseIgnore(ig.read(".git/info/exclude")) // ranks below the root's .gitignore
	}
	rs = append(rs, parseIgnore(ig.read(path.Join(dir, ".gitignore")))...)
	ig.dirs[dir] = rs
	return rs
}

func (ig *ignorer) read(name string) string {
	f, err := ig.root.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	return string(b)
}

// ignored reports whether name (slash-separated, beneath the root) is
// ignored by the .gitignore files of its directory and those above, or
// lies in an ignored directory (git never looks inside one). .git itself
// is always ignored.
func (ig *ignorer) ignored(name string, isDir bool) bool {
	parts := strings.Split(name, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		if parts[i] == ".git" || ig.decideOne(sub, isDir || !last) {
			return true
		}
	}
	return false
}

// decideOne applies the ignore files from the root down to name's own
// directory to name itself.
func (ig *ignorer) decideOne(name string, isDir bool) bool {
	ignored := false
	dir := "."
	for {
		rel := name
		if dir != "." {
			rel = name[len(dir)+1:]
		}
		if m, ign := decide(ig.rules(dir), rel, isDir); m {
			ignored = ign
		}
		next, _, ok := strings.Cut(rel, "/")
		if !ok {
			return ignored
		}
		dir = path.Join(dir, next)
	}
}
