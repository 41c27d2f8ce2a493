package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

type readOutput struct{}

func (readOutput) Definition() provider.Tool {
	return provider.Tool{
		Name:        "read_output",
		Description: "Read lines of an earlier tool call's full output when it was cut short.",
		Parameters: object(props{
			"id":     str("The tool call id"),
			"offset": integer("First line, 1-based"),
			"limit":  integer("Number of lines (default 400)"),
		}, "id"),
	}
}

type outputArgs struct {
	ID     string `json:"id"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func (readOutput) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a outputArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, errors.New("id is required")
	}
	a.Offset, a.Limit = lineWindow(a.Offset, a.Limit)
	return &Action{
		Title: "Read output of " + a.ID, Kind: acp.ToolKindRead, Access: AccessNone,
		Run: func(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
			if env.StoredOutput == nil {
				return Failure("no stored output")
			}
			full, err := env.StoredOutput(ctx, a.ID)
			if err != nil {
				return Failure("%v", err)
			}
			lines := splitLines(full)
			if a.Offset > len(lines) {
				return Failure("the output of %s has %d lines; offset %d is past the end", a.ID, len(lines), a.Offset)
			}
			end := min(a.Offset-1+a.Limit, len(lines))
			out := strings.Join(lines[a.Offset-1:end], "")
			if cut, was := Truncate(out, env.OutputLimit, "ask for fewer lines"); was {
				out = cut
			}
			if end < len(lines) {
				out += fmt.Sprintf("\n[lines %d-%d of %d; call read_output with offset=%d for more]", a.Offset, end, len(lines), end+1)
			}
			return textResult(out)
		},
	}, nil
}
