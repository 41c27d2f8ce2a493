package tool

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

type writeFile struct{}

func (writeFile) Definition() provider.Tool {
	return provider.Tool{
		Name:        "write_file",
		Description: "Create a file, or overwrite one read in this session, with the given content. For changes to existing files prefer editing.",
		Parameters: object(props{
			"path":    str("File path, relative to the project root"),
			"content": str("The complete new content"),
		}, "path", "content"),
	}
}

type writeArgs struct {
	Path     string  `json:"path"`
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

func (writeFile) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a writeArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Content == nil {
		return nil, errors.New("content is required")
	}
	p, err := env.Resolve(cmp.Or(a.Path, a.FilePath))
	if err != nil {
		return nil, err
	}
	content := *a.Content
	e := &fileEdit{env: env, p: p, mayCreate: true, apply: func(old string, created bool) (string, string, error) {
		verb := "Updated"
		if created {
			verb = "Created"
		} else if why := env.Reads.staleness(p, old); why != "" {
			return "", "", errors.New(why)
		}
		if created {
			return content, fmt.Sprintf("%s %s (%d lines).", verb, p.Display, len(splitLines(content))), nil
		}
		updated := inFileForm(content, old)
		if line, n := newPlaceholder(old, updated); n > 0 {
			return "", "", placeholderError(line, n, placeholderWriteAdvice)
		}
		return updated, fmt.Sprintf("%s %s (%d lines).", verb, p.Display, len(splitLines(updated))), nil
	}}
	return &Action{
		Title: "Write " + p.Display, Kind: acp.ToolKindEdit, Locations: locate(p, 0),
		Access: AccessEdit, Outside: outside(p), PermissionKey: "edit", AlwaysAsk: protectedWrite(p),
		Preview: e.preview, Run: e.run,
	}, nil
}

// inFileForm is content as a file whose text is old writes it: with old's
// byte-order mark and in its line endings (a model writes LF whatever the
// file has; a Windows file left with both is worse than either).
func inFileForm(content, old string) string {
	if eol := lineEnding(old); eol != "" {
		content = withLineEndings(content, eol)
	}
	if strings.HasPrefix(old, utf8BOM) && !strings.HasPrefix(content, utf8BOM) {
		content = utf8BOM + content
	}
	return content
}
