package tool

import (
	"io"
	"os"
	"path"
	"regexp"
	"strings"
)

// The part of gitignore(5) search and list_files honour, so that build
// output, dependencies and caches do not drown the results: a .gitignore
// in each directory (patterns relative to it, deeper files overriding
// shallower ones) and .git/info/exclude at the root, with "!" negation, a
// leading or inner "/" anchoring, a trailing "/" for directories only,
// "*", "?", "[...]", "**" and backslash escapes. An ignored directory is
// not entered, so nothing below it can be re-included (as in git).
// Global excludes (core.excludesFile) are not read.

// Bounds of what is read: one ignore file's size and a pattern's length.
const (
	maxIgnoreFile    = 256 << 10
	maxIgnorePattern = 4 << 10
)

type ignorePattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// parseIgnore compiles the patterns of one ignore file; lines it cannot
// read are skipped, as git does.
func parseIgnore(text string) []ignorePattern {
	var out []ignorePattern
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' || len(line) > maxIgnorePattern {
			continue
		}
		// Trailing spaces are dropped unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		var p ignorePattern
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
		expr, ok := ignoreRegexp(line)
		if !ok {
			continue
		}
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

// ignoreRegexp translates one glob of a gitignore line.
func ignoreRegexp(g string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(string(g[i])))
		case strings.HasPrefix(g[i:], "**/") && (i == 0 || g[i-1] == '/'):
			b.WriteString("(?:.*/)?")
			i += 2
		case g[i:] == "**" && (i == 0 || g[i-1] == '/'):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
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
				return "", false // an unclosed class: git ignores the line
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
	return b.String(), true
}

// match reports whether the patterns decide rel (slash-separated, relative
// to the ignore file's directory): matched, and if so whether ignored.
func matchIgnore(ps []ignorePattern, rel string, isDir bool) (matched, ignored bool) {
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

// ignorer answers for one walk beneath a root, loading each directory's
// .gitignore once.
type ignorer struct {
	r    *os.Root
	dirs map[string][]ignorePattern // by directory beneath the root ("." for the root)
}

func newIgnorer(r *os.Root) *ignorer {
	ig := &ignorer{r: r, dirs: map[string][]ignorePattern{}}
	return ig
}

func (ig *ignorer) load(dir string) []ignorePattern {
	if ps, ok := ig.dirs[dir]; ok {
		return ps
	}
	var ps []ignorePattern
	if dir == "." {
		// .git/info/exclude ranks below the root's .gitignore.
		ps = parseIgnore(ig.read(".git/info/exclude"))
	}
	ps = append(ps, parseIgnore(ig.read(path.Join(dir, ".gitignore")))...)
	ig.dirs[dir] = ps
	return ps
}

func (ig *ignorer) read(name string) string {
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

// ignored reports whether name (slash-separated, beneath the root) is
// ignored by the .gitignore files of its directory and those above it.
func (ig *ignorer) ignored(name string, isDir bool) bool {
	ignored := false
	dir := "."
	for {
		rel := name
		if dir != "." {
			rel = name[len(dir)+1:]
		}
		if m, ign := matchIgnore(ig.load(dir), rel, isDir); m {
			ignored = ign
		}
		next, _, ok := strings.Cut(rel, "/")
		if !ok {
			return ignored
		}
		dir = path.Join(dir, next)
	}
}
