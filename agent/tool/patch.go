package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/streaming"
)

type applyPatch struct{}

func (applyPatch) Definition() streaming.Tool {
	return streaming.Tool{
		Name: "apply_patch",
		Description: "Edit files with a patch; all files apply or none. Format:\n*** Begin Patch\n*** Update File: path\n@@ optional line to find first\n" +
			" context\n-removed\n+added\n*** Add File: path\n+content\n*** Delete File: path\n*** End Patch\n(*** Move to: path after Update File renames.)",
		Parameters: object(props{"input": str("The whole patch")}, "input"),
	}
}

type patchArgs struct {
	Input string `json:"input"`
	Patch string `json:"patch"` // a name some models use
}

func (applyPatch) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a patchArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Input == "" {
		a.Input = a.Patch
	}
	return preparePatch(env, a.Input)
}

// preparePatch parses a patch and resolves every path it touches through
// the same checks as write_file; the action reports them all.
func preparePatch(env *Env, input string) (*Action, error) {
	ops, err := parsePatch(input)
	if err != nil {
		return nil, err
	}
	pe := &patchEdit{env: env, ops: ops}
	seen := map[string]bool{}
	var all []Path
	resolve := func(name string) (Path, error) {
		p, err := env.Resolve(name)
		if err != nil {
			return Path{}, err
		}
		if seen[p.Abs] {
			return Path{}, fmt.Errorf("the patch touches %s twice; merge its hunks into one Update File", p.Display)
		}
		seen[p.Abs] = true
		all = append(all, p)
		return p, nil
	}
	for _, op := range ops {
		p, err := resolve(op.path)
		if err != nil {
			return nil, err
		}
		to := p
		if op.moveTo != "" {
			if to, err = resolve(op.moveTo); err != nil {
				return nil, err
			}
		}
		pe.paths = append(pe.paths, [2]Path{p, to})
	}
	act := &Action{
		Title: "Patch " + names(all), Kind: acp.ToolKindEdit, Access: AccessEdit, Outside: outside(all...),
		PermissionKey: "edit", Preview: pe.preview, Run: pe.run,
	}
	for _, p := range all {
		act.Locations = append(act.Locations, locate(p, 0)...)
		if why := protectedWrite(p); why != "" && act.AlwaysAsk == "" {
			act.AlwaysAsk = why
		}
	}
	return act, nil
}

func names(ps []Path) string {
	var n []string
	for i, p := range ps {
		if i == 3 {
			n = append(n, fmt.Sprintf("and %d more", len(ps)-i))
			break
		}
		n = append(n, p.Display)
	}
	return strings.Join(n, ", ")
}

// patchEdit is a prepared patch: Preview and Run both work it out with
// plan, so what the user approves is what is written.
type patchEdit struct {
	env   *Env
	ops   []patchOp
	paths [][2]Path // per op: its path and where it moves to (the same when it does not)

	previewed bool
	shown     []fileChange
}

// fileChange is what a patch does to one file.
type fileChange struct {
	p       Path
	old     string
	existed bool
	updated string
	deleted bool
}

// plan reads every file and applies the whole patch in memory.
func (pe *patchEdit) plan(ctx context.Context) ([]fileChange, []string, error) {
	var out []fileChange
	var notes []string
	for i, op := range pe.ops {
		p, to := pe.paths[i][0], pe.paths[i][1]
		old, err := pe.env.readText(ctx, p)
		exists := err == nil
		if err != nil && !errors.Is(err, errNotExist) {
			return nil, nil, err
		}
		switch op.kind {
		case patchAdd:
			if exists {
				return nil, nil, fmt.Errorf("*** Add File: %s: the file exists; use Update File to change it", p.Display)
			}
			out = append(out, fileChange{p: p, updated: op.add})
			continue
		case patchDelete:
			if !exists {
				return nil, nil, fmt.Errorf("*** Delete File: %s: %s", p.Display, notFound(p, err))
			}
			out = append(out, fileChange{p: p, old: old, existed: true, deleted: true})
			continue
		}
		if !exists {
			return nil, nil, fmt.Errorf("*** Update File: %s: %s", p.Display, notFound(p, err))
		}
		updated, how, err := applyHunks(old, op.hunks, p.Display)
		if err != nil {
			return nil, nil, errors.New(err.Error() + pe.env.Reads.changedSince(p, old))
		}
		notes = append(notes, how...)
		if line, n := newPlaceholder(old, updated); n > 0 {
			return nil, nil, fmt.Errorf("*** Update File: %s: %w", p.Display, placeholderError(line, n, placeholderPatchAdvice))
		}
		if to.Abs == p.Abs {
			out = append(out, fileChange{p: p, old: old, existed: true, updated: updated})
			continue
		}
		if _, err := pe.env.readText(ctx, to); !errors.Is(err, errNotExist) {
			return nil, nil, fmt.Errorf("*** Move to: %s: the file exists (or cannot be checked); nothing was changed", to.Display)
		}
		out = append(out, fileChange{p: to, updated: updated}, fileChange{p: p, old: old, existed: true, deleted: true})
	}
	return out, notes, nil
}

func (pe *patchEdit) preview(ctx context.Context) ([]acp.ToolCallContent, error) {
	pe.previewed = true
	cs, _, err := pe.plan(ctx)
	if err != nil {
		return nil, err
	}
	pe.shown = cs
	return patchDiffs(cs), nil
}

func patchDiffs(cs []fileChange) []acp.ToolCallContent {
	out := make([]acp.ToolCallContent, 0, len(cs))
	for _, c := range cs {
		out = append(out, diff(c.p, &change{old: c.old, created: !c.existed, updated: c.updated}))
	}
	return out
}

func (pe *patchEdit) run(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
	cs, notes, err := pe.plan(ctx)
	if err != nil {
		return Failure("%v; no file was changed", err)
	}
	if pe.previewed && !sameChanges(cs, pe.shown) {
		return Failure("a file changed after the patch was shown for approval; no file was changed. Read the files again and redo the patch.")
	}
	// Every change was worked out above; write them in order, and undo
	// the written ones if a later write fails, so the patch applies whole
	// or not at all.
	for i, c := range cs {
		if err := pe.apply(ctx, c); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = pe.undo(ctx, cs[j])
			}
			return Failure("%s: %v; the patch was not applied (earlier files were restored)", c.p.Display, err)
		}
	}
	var done []string
	for _, c := range cs {
		verb := "M"
		switch {
		case c.deleted:
			verb = "D"
			pe.env.Reads.forget(c.p.Abs)
		case !c.existed:
			verb = "A"
		}
		if !c.deleted {
			pe.env.Reads.saw(c.p.Abs, c.updated)
		}
		done = append(done, verb+" "+c.p.Display)
	}
	out := "Applied the patch: " + strings.Join(done, ", ") + "."
	if len(notes) > 0 {
		out += " Not an exact match: " + strings.Join(notes, "; ") + "; check the result."
	}
	return Result{Output: out, Content: patchDiffs(cs)}
}

func sameChanges(a, b []fileChange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].p.Abs != b[i].p.Abs || a[i].old != b[i].old || a[i].existed != b[i].existed || a[i].deleted != b[i].deleted {
			return false
		}
	}
	return true
}

func (pe *patchEdit) apply(ctx context.Context, c fileChange) error {
	if c.deleted {
		return removeRegular(c.p)
	}
	return pe.env.writeText(ctx, c.p, c.updated)
}

func (pe *patchEdit) undo(ctx context.Context, c fileChange) error {
	if c.existed {
		return pe.env.writeText(ctx, c.p, c.old)
	}
	return removeRegular(c.p)
}

// removeRegular deletes a regular file beneath its root (a symlink swapped
// in meanwhile is not followed out of it).
func removeRegular(p Path) error {
	if _, err := statRegular(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	r, err := openRoot(p)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Remove(p.Rel)
}

// applyHunks applies an update's hunks in order: each is found at or after
// the end of the one before, through the ladder (exact, trailing
// whitespace, indentation, quotes), like codex's seek_sequence.
func applyHunks(text string, hunks []hunk, file string) (string, []string, error) {
	crlf := strings.Contains(text, "\r\n")
	if crlf {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type rep struct {
		at, n int
		new   []string
	}
	var reps []rep
	var notes []string
	cursor := 0
	for i, h := range hunks {
		where := fmt.Sprintf("Update File %s, hunk %d (patch line %d)", file, i+1, h.line)
		if h.context != "" {
			at, how := seekLines(lines, []string{h.context}, cursor, false)
			if at < 0 {
				return "", nil, fmt.Errorf("%s: the @@ line %q is not in the file.%s", where, cut(h.context, 120), nearHint(text, h.context))
			}
			if how != "" {
				notes = append(notes, fmt.Sprintf("%s hunk %d after %s", file, i+1, how))
			}
			cursor = at + 1
		}
		if len(h.old) == 0 {
			at := len(lines)
			if h.context != "" && !h.eof {
				at = cursor
			}
			reps = append(reps, rep{at, 0, h.new})
			continue
		}
		old, nw := h.old, h.new
		at, how := seekLines(lines, old, cursor, h.eof)
		if at < 0 && old[len(old)-1] == "" {
			old = old[:len(old)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw = nw[:len(nw)-1]
			}
			at, how = seekLines(lines, old, cursor, h.eof)
		}
		if at < 0 {
			return "", nil, fmt.Errorf("%s: its context and removed lines are not in the file (after line %d).%s", where, cursor, nearHint(text, strings.Join(h.old, "\n")))
		}
		if how == "normalising indentation" {
			region := make([]fileLine, len(old))
			for k := range old {
				region[k] = fileLine{text: lines[at+k]}
			}
			if re, ok := reindent(region, old, nw); ok {
				nw = re
			}
		}
		if how != "" {
			notes = append(notes, fmt.Sprintf("%s hunk %d after %s", file, i+1, how))
		}
		reps = append(reps, rep{at, len(old), nw})
		cursor = at + len(old)
	}
	for i := len(reps) - 1; i >= 0; i-- {
		r := reps[i]
		lines = append(lines[:r.at], append(append([]string{}, r.new...), lines[r.at+r.n:]...)...)
	}
	out := strings.Join(lines, "\n") + "\n"
	if crlf {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out, notes, nil
}

// seekLines finds pat in lines at or after start (at the end first when
// eof), trying looser comparisons in turn; how names the one that matched
// ("" for exact). -1 when none does.
func seekLines(lines, pat []string, start int, eof bool) (int, string) {
	if len(pat) == 0 || len(pat) > len(lines) {
		return -1, ""
	}
	for _, rung := range []struct {
		how  string
		norm func(string) string
	}{
		{"", func(s string) string { return s }},
		{"ignoring trailing whitespace", func(s string) string { return strings.TrimRight(s, " \t\r") }},
		{"normalising indentation", func(s string) string { return strings.TrimSpace(s) }},
		{"normalising quotes", func(s string) string { return curly.Replace(strings.TrimSpace(s)) }},
	} {
		match := func(at int) bool {
			for k, w := range pat {
				if rung.norm(lines[at+k]) != rung.norm(w) {
					return false
				}
			}
			return true
		}
		if eof && len(lines)-len(pat) >= start && match(len(lines)-len(pat)) {
			return len(lines) - len(pat), rung.how
		}
		for at := start; at+len(pat) <= len(lines); at++ {
			if match(at) {
				return at, rung.how
			}
		}
	}
	return -1, ""
}

func nearHint(text, want string) string {
	if near := nearestLines(text, want); near != "" {
		return " The most similar lines in the file (→ tab, · trailing space):\n" + near
	}
	return " Read the file and copy its lines exactly."
}
