package tool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

const (
	maxSearchMatches   = 200
	maxSearchFileBytes = 4 << 20
)

type search struct{}

func (search) Definition() provider.Tool {
	return provider.Tool{
		Name:        "search",
		Description: "Search file contents with a regular expression (RE2), skipping .gitignored files. Returns path:line: text.",
		Parameters: object(props{
			"pattern":     str("Regular expression"),
			"path":        str("File or directory to search (default .)"),
			"glob":        str("Only files matching this glob, e.g. **/*.go"),
			"context":     integer("Lines around each match"),
			"ignore_case": map[string]any{"type": "boolean"},
			"files_only":  map[string]any{"type": "boolean"},
		}, "pattern"),
	}
}

type searchArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Context    int    `json:"context"`
	IgnoreCase bool   `json:"ignore_case"`
	FilesOnly  bool   `json:"files_only"`
}

// maxSearchContext bounds the context lines around a match.
const maxSearchContext = 10

func (search) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a searchArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Pattern == "" {
		return nil, fmt.Errorf("pattern is required")
	}
	expr := a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	a.Context = min(max(a.Context, 0), maxSearchContext)
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %v", err)
	}
	var glob *regexp.Regexp
	if a.Glob != "" {
		if glob, err = globRegexp(a.Glob); err != nil {
			return nil, err
		}
	}
	if a.Path == "" {
		a.Path = "."
	}
	p, err := env.Resolve(a.Path)
	if err != nil {
		return nil, err
	}
	return &Action{
		Title: fmt.Sprintf("Search %q in %s", a.Pattern, p.Display), Kind: acp.ToolKindSearch,
		Locations: locate(p, 0), Access: AccessRead, Outside: outside(p), PermissionKey: "read", AlwaysAsk: protectedRead(p),
		Run: func(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
			var b strings.Builder
			n, more := 0, false
			grep := func(r *os.Root, name, rel string) {
				ms, lines := grepFile(r, p, name, re, maxSearchMatches-n+1)
				if a.FilesOnly {
					if len(ms) > 0 {
						if n == maxSearchMatches {
							more = true
							return
						}
						fmt.Fprintf(&b, "%s\n", rel)
						n++
					}
					return
				}
				shown := 0 // lines of this file already printed
				for _, m := range ms {
					if n == maxSearchMatches {
						more = true
						return
					}
					if a.Context > 0 {
						from := max(m.line-a.Context, shown+1)
						if b.Len() > 0 && (shown == 0 || from > shown+1) {
							b.WriteString("--\n")
						}
						for l := from; l < m.line; l++ {
							fmt.Fprintf(&b, "%s-%d- %s\n", rel, l, showLine(lines[l-1]))
						}
					}
					fmt.Fprintf(&b, "%s:%d: %s\n", rel, m.line, m.text)
					shown = m.line
					for l := m.line + 1; l <= min(m.line+a.Context, len(lines)); l++ {
						if next := nextMatch(ms, m.line); next != 0 && l >= next {
							break
						}
						fmt.Fprintf(&b, "%s-%d- %s\n", rel, l, showLine(lines[l-1]))
						shown = l
					}
					n++
				}
			}
			r, err := openRoot(p)
			if err != nil {
				return Failure("search %s: %v", p.Display, err)
			}
			defer r.Close()
			if fi, err := r.Lstat(p.Rel); err == nil && !fi.IsDir() {
				grep(r, p.Rel, p.Display)
			} else {
				err := walkRoot(ctx, p, func(r *os.Root, name, rel string, d fs.DirEntry) bool {
					if d.IsDir() || (glob != nil && !glob.MatchString(rel) && !glob.MatchString(d.Name())) {
						return true
					}
					// Symlinks are not followed (as grep -r and ripgrep):
					// one planted inside could point at any file outside.
					if d.Type()&fs.ModeSymlink != 0 {
						return true
					}
					shown := rel
					if p.Display != "." {
						shown = filepath.ToSlash(filepath.Join(p.Display, rel))
					}
					grep(r, name, shown)
					return !more
				})
				if err != nil {
					return Failure("%v", err)
				}
			}
			out := strings.TrimSuffix(b.String(), "\n")
			if n == 0 {
				out = "No matches."
			}
			if more {
				out += fmt.Sprintf("\n[stopped at %d matches; narrow the pattern, path or glob]", maxSearchMatches)
			}
			return cutResult(env, textResult(out))
		},
	}, nil
}

// foundLine is a line that matched, as the results show it.
type foundLine struct {
	line int
	text string
}

// nextMatch is the line of the match after line, 0 if none.
func nextMatch(ms []foundLine, line int) int {
	for _, m := range ms {
		if m.line > line {
			return m.line
		}
	}
	return 0
}

// showLine cuts a long line for the results.
func showLine(t string) string {
	return clipLine(strings.TrimRight(t, "\r"), maxMatchLine)
}

// grepFile returns up to max matching lines of the text file name beneath r
// (searched as part of p); binary, very large and irregular files (FIFOs,
// devices, files with other hard links inside the workspace) are skipped.
func grepFile(r *os.Root, p Path, name string, re *regexp.Regexp, max int) ([]foundLine, []string) {
	f, fi, err := openRegular(r, p, name)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	if fi.Size() > maxSearchFileBytes {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSearchFileBytes+1))
	if err != nil || len(data) > maxSearchFileBytes || isBinary(data) {
		return nil, nil
	}
	var out []foundLine
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxSearchFileBytes)
	for line := 1; sc.Scan() && len(out) < max; line++ {
		t := sc.Text()
		lines = append(lines, t)
		if re.MatchString(t) {
			out = append(out, foundLine{line, showLine(t)})
		}
	}
	// The lines after the last match, for its context.
	for i := 0; i < maxSearchContext && sc.Scan(); i++ {
		lines = append(lines, sc.Text())
	}
	return out, lines
}
