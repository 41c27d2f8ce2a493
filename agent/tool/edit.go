package tool

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/streaming"
)

type editFile struct{}

func (editFile) Definition() streaming.Tool {
	return streaming.Tool{
		Name:        "edit_file",
		Description: "Replace old_string with new_string in a file; old_string must be unique unless replace_all. Small whitespace slips are tolerated and reported.",
		Parameters: object(props{
			"path":        str("File path, relative to the project root"),
			"old_string":  str("Text copied from the file, without line numbers"),
			"new_string":  str("Replacement text"),
			"replace_all": map[string]any{"type": "boolean"},
			"edits": map[string]any{"type": "array", "items": map[string]any{"type": "object"},
				"description": "Several {old_string,new_string,replace_all}, applied all or none"},
		}, "path"),
	}
}

// editSpec is one replacement as the model sends it: the names models are
// trained on, or crow-acp's older old/new/all.
type editSpec struct {
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll *bool   `json:"replace_all"`
	Old        *string `json:"old"`
	New        *string `json:"new"`
	All        *bool   `json:"all"`
}

type editArgs struct {
	Path     string `json:"path"`
	FilePath string `json:"file_path"`
	editSpec
	Edits []editSpec `json:"edits"`
}

func (s editSpec) replacement() (replacement, error) {
	old, nw, all := s.OldString, s.NewString, s.ReplaceAll
	if old == nil {
		old = s.Old
	}
	if nw == nil {
		nw = s.New
	}
	if all == nil {
		all = s.All
	}
	switch {
	case old == nil || *old == "":
		return replacement{}, errors.New("old_string is required (to create a file use write_file)")
	case nw == nil:
		return replacement{}, errors.New("new_string is required")
	case *old == *nw:
		return replacement{}, errors.New("old_string and new_string are the same: nothing to change")
	}
	return replacement{Old: *old, New: *nw, All: all != nil && *all}, nil
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
		if err != nil {
			return nil, fmt.Errorf("edits[%d]: %v", i, err)
		}
		reps = append(reps, r)
	}
	p, err := env.Resolve(cmp.Or(a.Path, a.FilePath))
	if err != nil {
		return nil, err
	}
	e := &edit{env: env, p: p, apply: func(text string, _ bool) (string, string, error) {
		updated, summary, err := applyReplacements(text, reps, p.Display)
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

// applyReplacements applies reps in order to text, all or none, and says
// what was done (naming any tolerant match).
func applyReplacements(text string, reps []replacement, file string) (string, string, error) {
	var notes []string
	count, first := 0, 0
	for i, r := range reps {
		if ph := placeholder(r.New, text); ph != "" {
			return "", "", placeholderError(ph)
		}
		res, err := applyReplacement(text, r, file)
		if err != nil {
			if len(reps) > 1 {
				err = fmt.Errorf("edit %d of %d: %w (no edit was applied)", i+1, len(reps), err)
			}
			return "", "", err
		}
		text, count = res.text, count+res.count
		if first == 0 || res.line < first {
			first = res.line
		}
		if res.how != "" {
			note := "matched after " + res.how
			if len(reps) > 1 {
				note = fmt.Sprintf("edit %d %s", i+1, note)
			}
			notes = append(notes, note)
		}
	}
	out := fmt.Sprintf("Edited %s: %d replacement(s), first at line %d.", file, count, first)
	if len(notes) > 0 {
		out += " Not an exact match: " + strings.Join(notes, "; ") + "; check the result."
	}
	return text, out, nil
}

func placeholderError(line string) error {
	return fmt.Errorf("the new text contains the placeholder %q, which is not in the file: writing it would delete the code it stands for. Send the complete text instead", line)
}
