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
	"github.com/crow-acp/crow-acp/streaming"
)

const (
	maxSearchMatches   = 200
	maxSearchFileBytes = 4 << 20
	maxMatchLine       = 240
)

type search struct{}

func (search) Definition() streaming.Tool {
	return streaming.Tool{
		Name:        "search",
		Description: "Search file contents with a regular expression (RE2). Returns path:line: text.",
		Parameters: object(props{
			"pattern": str("Regular expression"),
			"path":    str("File or directory to search (default .)"),
			"glob":    str("Only files matching this glob, e.g. **/*.go"),
		}, "pattern"),
	}
}

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

func (search) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a searchArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Pattern == "" {
		return nil, fmt.Errorf("pattern is required")
	}
	re, err := regexp.Compile(a.Pattern)
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
				for _, m := range grepFile(r, p, name, re, maxSearchMatches-n+1) {
					if n == maxSearchMatches {
						more = true
						return
					}
					fmt.Fprintf(&b, "%s:%d: %s\n", rel, m.line, m.text)
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

type match struct {
	line int
	text string
}

// grepFile returns up to max matching lines of the text file name beneath r
// (searched as part of p); binary, very large and irregular files (FIFOs,
// devices, files with other hard links inside the workspace) are skipped.
func grepFile(r *os.Root, p Path, name string, re *regexp.Regexp, max int) []match {
	f, fi, err := openRegular(r, p, name)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi.Size() > maxSearchFileBytes {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSearchFileBytes+1))
	if err != nil || len(data) > maxSearchFileBytes || isBinary(data) {
		return nil
	}
	var out []match
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxSearchFileBytes)
	for line := 1; sc.Scan() && len(out) < max; line++ {
		if t := sc.Text(); re.MatchString(t) {
			if len(t) > maxMatchLine {
				t = t[:maxMatchLine] + "…"
			}
			out = append(out, match{line, strings.TrimRight(t, "\r")})
		}
	}
	return out
}
