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

type editFile struct{}

func (editFile) Definition() provider.Tool {
	return provider.Tool{
		Name:        "edit_file",
		Description: "Replace old_string with new_string in a file; old_string must be unique unless replace_all. Small whitespace slips are tolerated and reported. An empty old_string creates a file that does not exist.",
		Parameters: object(props{
			"path":        str("File path, relative to the project root"),
			"old_string":  str("Text copied from the file, without line numbers"),
			"new_string":  str("Replacement text, complete: no placeholder for unchanged code"),
			"replace_all": map[string]any{"type": "boolean"},
			"edits": map[string]any{"type": "array", "items": map[string]any{"type": "object"},
				"description": "Several {old_string,new_string,replace_all}, applied all or none"},
		}, "path"),
	}
}

// editSpec is one replacement as the model sends it: the names models are
// trained on, or crow-acp's older old/new/all. expected_replacements is
// gemini-cli's count of the places to change (its older dialect; its
// allow_multiple is repaired to replace_all before the call gets here).
type editSpec struct {
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll *bool   `json:"replace_all"`
	Old        *string `json:"old"`
	New        *string `json:"new"`
	All        *bool   `json:"all"`
	Expected   *int    `json:"expected_replacements"`
}

type editArgs struct {
	Path     string `json:"path"`
	FilePath string `json:"file_path"`
	editSpec
	Edits []editSpec `json:"edits"`
}

func (s editSpec) replacement() (replacement, error) {
	old, nw, all := cmp.Or(s.OldString, s.Old), cmp.Or(s.NewString, s.New), cmp.Or(s.ReplaceAll, s.All)
	switch {
	case old == nil:
		return replacement{}, errors.New("old_string is required (an empty one creates a file that does not exist yet)")
	case nw == nil:
		return replacement{}, errors.New("new_string is required")
	case *old == *nw:
		return replacement{}, errors.New("old_string and new_string are the same: nothing to change")
	case s.Expected != nil && *s.Expected < 1:
		return replacement{}, errors.New("expected_replacements must be 1 or more")
	}
	r := replacement{Old: *old, New: *nw, All: all != nil && *all}
	if s.Expected != nil {
		r.Expect = *s.Expected
	}
	return r, nil
}

func (editFile) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a editArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	var reps []replacement
	single := a.OldString != nil || a.Old != nil || a.NewString != nil || a.New != nil
	if single || len(a.Edits) == 0 {
		r, err := a.replacement()
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	for i, s := range a.Edits {
		r, err := s.replacement()
		if err == nil && r.Old == "" && len(reps) > 0 {
			err = errors.New("old_string is empty: only the first edit may create the file; quote the exact text to replace")
		}
		if err != nil {
			return nil, fmt.Errorf("edits[%d]: %v", i, err)
		}
		reps = append(reps, r)
	}
	p, err := env.Resolve(cmp.Or(a.Path, a.FilePath))
	if err != nil {
		return nil, err
	}
	e := &fileEdit{env: env, p: p, mayCreate: reps[0].Old == "", apply: func(text string, created bool) (string, string, error) {
		updated, summary, err := applyReplacements(text, created, reps, p.Display)
		if err != nil {
			var me *matchError
			if errors.As(err, &me) {
				return "", "", errors.New(err.Error() + env.Reads.changedSince(p, text))
			}
			return "", "", err
		}
		return updated, summary, nil
	}}
	return &Action{
		Title: "Edit " + p.Display, Kind: acp.ToolKindEdit, Locations: locate(p, 0),
		Access: AccessEdit, Outside: outside(p), PermissionKey: "edit", AlwaysAsk: protectedWrite(p),
		Preview: e.preview, Run: e.run,
	}, nil
}

// applyReplacements applies reps in order to text (created: the file does
// not exist yet, text is empty), all or none, and says what was done
// (naming any tolerant match). The file keeps its byte-order mark and its
// line endings: new text is written in them.
func applyReplacements(text string, created bool, reps []replacement, file string) (string, string, error) {
	bom, body := "", text
	if b, ok := strings.CutPrefix(text, utf8BOM); ok {
		bom, body = utf8BOM, b
	}
	var notes []string
	count, first := 0, 0
	for i, r := range reps {
		r.Old, r.New = strings.TrimPrefix(r.Old, utf8BOM), strings.TrimPrefix(r.New, utf8BOM)
		if eol := lineEnding(body); eol != "" {
			r.New = withLineEndings(r.New, eol)
		}
		var res replaced
		var err error
		if r.Old == "" {
			res, err = fill(body, created, r.New, file)
		} else {
			res, err = applyReplacement(body, r, file)
		}
		if err != nil {
			if len(reps) > 1 {
				err = fmt.Errorf("edit %d of %d: %w (no edit was applied)", i+1, len(reps), err)
			}
			return "", "", err
		}
		body, count = res.text, count+res.count
		if first == 0 || res.line < first {
			first = res.line
		}
		if res.how != "" {
			note := "matched after " + res.how
			if res.count > 1 {
				note += fmt.Sprintf(" (all %d places)", res.count)
			}
			if len(reps) > 1 {
				note = fmt.Sprintf("edit %d %s", i+1, note)
			}
			notes = append(notes, note)
		}
	}
	updated := bom + body
	if line, n := newPlaceholder(text, updated); n > 0 {
		return "", "", placeholderError(line, n, placeholderEditAdvice)
	}
	out := fmt.Sprintf("Edited %s: %d replacement(s), first at line %d.", file, count, first)
	if created {
		out = fmt.Sprintf("Created %s (%d lines).", file, len(splitLines(updated)))
		if len(reps) > 1 {
			out = fmt.Sprintf("Created %s (%d lines) from the first edit, then made %d replacement(s).", file, len(splitLines(updated)), count-1)
		}
	}
	if len(notes) > 0 {
		out += " Not an exact match: " + strings.Join(notes, "; ") + "; check the result."
	}
	return updated, out, nil
}

// fill is an empty old_string: it creates a file that does not exist (as
// Claude Code, opencode and gemini-cli do) or fills an empty one, and is
// refused for a file that has content, which it would overwrite.
func fill(body string, created bool, content, file string) (replaced, error) {
	if created || strings.TrimSpace(body) == "" {
		return replaced{text: content, count: 1, line: 1}, nil
	}
	return replaced{}, fmt.Errorf("old_string is empty, which creates a new file, but %s already exists with %d lines: quote the exact text to replace, or read the file and use write_file to replace all of it",
		file, len(splitLines(body)))
}
