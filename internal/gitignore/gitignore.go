// Package gitignore is the part of gitignore(5) crow-acp honours when it
// lists, searches or completes the files of a workspace. The files are the
// workspace's, so untrusted: what is read and kept is bounded. It imports
// nothing else of crow-acp.
package gitignore

import (
	"io"
	"os"
	"path"
	"regexp"
	"strings"
)

// The part of gitignore(5) search, list_files and the chat's completion honour, so that build
// output, dependencies and caches do not drown the results: a .gitignore
// in each directory (patterns relative to it, deeper files overriding
// shallower ones) and .git/info/exclude at the root, with "!" negation, a
// leading or inner "/" anchoring, a trailing "/" for directories only,
// "*", "?", "[...]", "**" and backslash escapes. An ignored directory is
// not entered, so nothing below it can be re-included (as in git).
// Global excludes (core.excludesFile) are not read.

// Bounds of what is read: one ignore file's size, a pattern's length, and
// the patterns and wildcards kept of one file. An ignore file is the
// workspace's, so untrusted: every wildcard keeps a matcher thread alive
// along the path, so the wildcards bound what matching one path can cost
// (regexp's time is linear in program and path, never exponential). Real
// files stay far below them; lines past a bound are not honoured.
const (
	maxIgnoreFile      = 256 << 10
	maxIgnorePattern   = 1 << 10
	maxIgnorePatterns  = 1000
	maxIgnoreWildcards = 256
)

// Pattern is one compiled line of an ignore file.
type Pattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// Parse compiles the patterns of one ignore file; lines it cannot
// read are skipped, as git does.
func Parse(text string) []Pattern {
	var out []Pattern
	wildcards := 0
	for _, line := range strings.Split(text, "\n") {
		if len(out) == maxIgnorePatterns {
			break
		}
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' || len(line) > maxIgnorePattern {
			continue
		}
		// Trailing spaces are dropped unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		if line == "" { // a line of spaces
			continue
		}
		var p Pattern
		if line[0] == '!' {
			p.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		expr, n, ok := ignoreRegexp(line)
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
		p.re = re
		out = append(out, p)
	}
	return out
}

// ignoreRegexp translates one glob of a gitignore line, and counts its
// wildcards.
func ignoreRegexp(g string) (string, int, bool) {
	var b strings.Builder
	wildcards := 0
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(string(g[i])))
		case strings.HasPrefix(g[i:], "**/") && (i == 0 || g[i-1] == '/'):
			b.WriteString("(?:.*/)?")
			i += 2
			wildcards++
		case g[i:] == "**" && (i == 0 || g[i-1] == '/'):
			b.WriteString(".*")
			i++
			wildcards++
		case c == '*':
			// A run of stars inside a name is one star.
			for i+1 < len(g) && g[i+1] == '*' {
				i++
			}
			b.WriteString("[^/]*")
			wildcards++
		case c == '?':
			b.WriteString("[^/]")
			wildcards++
		case c == '[':
			wildcards++
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
				return "", 0, false // an unclosed class: git ignores the line
			}
			class := g[i+1 : j]
			if class != "" && class[0] == '!' {
				class = "^" + class[1:]
			}
			class = strings.ReplaceAll(class, `\`, `\\`)
			class = strings.ReplaceAll(class, `[`, `\[`)
			b.WriteString("[" + class + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String(), wildcards, true
}

// match reports whether the patterns decide rel (slash-separated, relative
// to the ignore file's directory): matched, and if so whether ignored.
func Match(ps []Pattern, rel string, isDir bool) (matched, ignored bool) {
	for i := len(ps) - 1; i >= 0; i-- { // the last matching line wins
		p := ps[i]
		if p.dirOnly && !isDir {
			continue
		}
		if p.re.MatchString(rel) {
			return true, !p.negate
		}
	}
	return false, false
}

// Matcher answers beneath a root, loading each directory's .gitignore once
// (not safe for concurrent use).
type Matcher struct {
	r    *os.Root
	dirs map[string][]Pattern // by directory beneath the root ("." for the root)
}

// New returns a Matcher for the workspace held open as r.
func New(r *os.Root) *Matcher {
	return &Matcher{r: r, dirs: map[string][]Pattern{}}
}

func (ig *Matcher) load(dir string) []Pattern {
	if ps, ok := ig.dirs[dir]; ok {
		return ps
	}
	var ps []Pattern
	if dir == "." {
		// .git/info/exclude ranks below the root's .gitignore.
		ps = Parse(ig.read(".git/info/exclude"))
	}
	ps = append(ps, Parse(ig.read(path.Join(dir, ".gitignore")))...)
	ig.dirs[dir] = ps
	return ps
}

func (ig *Matcher) read(name string) string {
	f, err := ig.r.Open(name)
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

// Ignored reports whether name (slash-separated, beneath the root) is
// ignored by the .gitignore files of its directory and those above it,
// for a walk that does not enter ignored directories (name's own parents
// are not checked: see IgnoredPath).
func (ig *Matcher) Ignored(name string, isDir bool) bool {
	ignored := false
	dir := "."
	for {
		rel := name
		if dir != "." {
			rel = name[len(dir)+1:]
		}
		if m, ign := Match(ig.load(dir), rel, isDir); m {
			ignored = ign
		}
		next, _, ok := strings.Cut(rel, "/")
		if !ok {
			return ignored
		}
		dir = path.Join(dir, next)
	}
}

// IgnoredPath reports whether name (slash-separated, beneath the root) is
// ignored itself or lies in an ignored directory (git never looks inside
// one), for a path not reached by a walk (a completion). .git itself is
// always ignored.
func (ig *Matcher) IgnoredPath(name string, isDir bool) bool {
	parts := strings.Split(name, "/")
	for i := range parts {
		last := i == len(parts)-1
		if parts[i] == ".git" || ig.Ignored(strings.Join(parts[:i+1], "/"), isDir || !last) {
			return true
		}
	}
	return false
}
