package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/streaming"
)

type writeFile struct{}

func (writeFile) Definition() streaming.Tool {
	return streaming.Tool{
		Name:        "write_file",
		Description: "Create or overwrite a file with the given content. Prefer edit_file for changes to existing files.",
		Parameters: object(props{
			"path":    str("File path, relative to the project root"),
			"content": str("The complete new content"),
		}, "path", "content"),
	}
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

func (writeFile) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a writeArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Content == nil {
		return nil, errors.New("content is required")
	}
	p, err := env.Resolve(a.Path)
	if err != nil {
		return nil, err
	}
	return &Action{
		Title: "Write " + p.Display, Kind: acp.ToolKindEdit, Locations: locate(p, 0),
		Access: AccessEdit, Outside: outside(p), PermissionKey: "edit",
		Run: func(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
			old, err := env.readText(ctx, p)
			created := errors.Is(err, errNotExist)
			if err != nil && !created {
				return Failure("%v", err)
			}
			if err := env.writeText(ctx, p, *a.Content); err != nil {
				return Failure("write %s: %v", p.Display, err)
			}
			verb := "Updated"
			if created {
				verb = "Created"
			}
			return Result{
				Output:  fmt.Sprintf("%s %s (%d lines).", verb, p.Display, len(splitLines(*a.Content))),
				Content: []acp.ToolCallContent{diff(p, old, created, *a.Content)},
			}
		},
	}, nil
}

// diff is the client's view of a change (oldText nil for a new file).
func diff(p Path, old string, created bool, newText string) acp.ToolCallContent {
	d := &acp.Diff{Path: p.Abs, NewText: newText}
	if !created {
		d.OldText = ptr(old)
	}
	return acp.ToolCallContent{Diff: d}
}

type editFile struct{}

func (editFile) Definition() streaming.Tool {
	return streaming.Tool{
		Name:        "edit_file",
		Description: "Replace exact text in a file. old must match the file exactly (whitespace included) and be unique unless all is true.",
		Parameters: object(props{
			"path": str("File path, relative to the project root"),
			"old":  str("Exact text to replace"),
			"new":  str("Replacement text"),
			"all":  map[string]any{"type": "boolean", "description": "Replace every occurrence"},
		}, "path", "old", "new"),
	}
}

type editArgs struct {
	Path string  `json:"path"`
	Old  string  `json:"old"`
	New  *string `json:"new"`
	All  bool    `json:"all"`
}

func (editFile) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a editArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Old == "" {
		return nil, errors.New("old is required (to create a file use write_file)")
	}
	if a.New == nil {
		return nil, errors.New("new is required")
	}
	if a.Old == *a.New {
		return nil, errors.New("old and new are the same: nothing to change")
	}
	p, err := env.Resolve(a.Path)
	if err != nil {
		return nil, err
	}
	return &Action{
		Title: "Edit " + p.Display, Kind: acp.ToolKindEdit, Locations: locate(p, 0),
		Access: AccessEdit, Outside: outside(p), PermissionKey: "edit",
		Run: func(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
			old, err := env.readText(ctx, p)
			if err != nil {
				return Failure("%s", notFound(p, err))
			}
			n := strings.Count(old, a.Old)
			switch {
			case n == 0:
				return Failure("old text not found in %s; read the file and copy the text exactly", p.Display)
			case n > 1 && !a.All:
				return Failure("old text found %d times in %s; include more surrounding lines to make it unique, or set all=true", n, p.Display)
			}
			count := 1
			if a.All {
				count = n
			}
			updated := strings.Replace(old, a.Old, *a.New, count)
			if err := env.writeText(ctx, p, updated); err != nil {
				return Failure("write %s: %v", p.Display, err)
			}
			line := 1 + strings.Count(old[:strings.Index(old, a.Old)], "\n")
			return Result{
				Output:  fmt.Sprintf("Edited %s: %d replacement(s), first at line %d.", p.Display, count, line),
				Content: []acp.ToolCallContent{diff(p, old, false, updated)},
			}
		},
	}, nil
}
