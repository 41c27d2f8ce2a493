package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// maxListEntries bounds list_files and glob results.
const maxListEntries = 500

type listFiles struct{}

func (listFiles) Definition() provider.Tool {
	return provider.Tool{
		Name:        "list_files",
		Description: "List a directory, or find files by glob pattern (e.g. **/*.go) under it.",
		Parameters: object(props{
			"path":    str("Directory, relative to the project root (default .)"),
			"pattern": str("Glob pattern, matched against paths relative to path"),
		}),
	}
}

type listArgs struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
}

func (listFiles) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a listArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Path == "" {
		a.Path = "."
	}
	p, err := env.Resolve(a.Path)
	if err != nil {
		return nil, err
	}
	act := &Action{
		Title: "List " + p.Display, Kind: acp.ToolKindRead, Locations: locate(p, 0),
		Access: AccessRead, Outside: outside(p), PermissionKey: "read",
	}
	if a.Pattern == "" {
		act.Run = func(ctx context.Context, _ func([]acp.ToolCallContent)) Result { return listDir(p) }
		return act, nil
	}
	re, err := globRegexp(a.Pattern)
	if err != nil {
		return nil, err
	}
	act.Title = fmt.Sprintf("Find %s in %s", a.Pattern, p.Display)
	act.Kind = acp.ToolKindSearch
	act.Run = func(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
		var found []string
		more := false
		err := walkRoot(ctx, p, func(_ *os.Root, _, rel string, d fs.DirEntry) bool {
			if !d.IsDir() && re.MatchString(rel) {
				if len(found) == maxListEntries {
					more = true
					return false
				}
				found = append(found, rel)
			}
			return true
		})
		if err != nil {
			return Failure("%v", err)
		}
		sort.Strings(found)
		out := strings.Join(found, "\n")
		if len(found) == 0 {
			out = "No files match " + a.Pattern + "."
		}
		if more {
			out += fmt.Sprintf("\n[stopped at %d matches; narrow the pattern or path]", maxListEntries)
		}
		return cutResult(env, textResult(out))
	}
	return act, nil
}

func listDir(p Path) Result {
	entries, err := readDir(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Failure("directory not found: %s", p.Display)
		}
		return Failure("list %s: %v", p.Display, err)
	}
	var b strings.Builder
	for i, e := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&b, "[%d more entries not shown; use pattern to narrow]\n", len(entries)-i)
			break
		}
		b.WriteString(e.Name())
		if e.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	if len(entries) == 0 {
		return textResult(p.Display + " is empty.")
	}
	return textResult(strings.TrimSuffix(b.String(), "\n"))
}

// globRegexp compiles a glob with ** (any directories), *, ? and {a,b}.
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '{':
			b.WriteString("(?:")
			depth++
		case c == '}' && depth > 0:
			b.WriteString(")")
			depth--
		case c == ',' && depth > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("invalid glob %q: %v", glob, err)
	}
	return re, nil
}
