package tool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

type applyPatch struct{}

func (applyPatch) Definition() provider.Tool {
	return provider.Tool{
		Name: "apply_patch",
		Description: "Edit files with a patch; all files apply or none. Format:\n*** Begin Patch\n*** Update File: path\n@@ optional line to find first\n" +
			" context\n-removed\n+added\n*** Add File: path\n+content\n*** Delete File: path\n*** End Patch\n(*** Move to: path after Update File renames.)",
		Parameters: object(props{"input": str("The whole patch")}, "input"),
	}
}

type patchArgs struct {
	Input string `json:"input"`
	// Names other agents' tools use (repair renames them and says so
	// when apply_patch is offered; a call to it unoffered arrives as sent).
	Patch     string `json:"patch"`
	PatchText string `json:"patchText"` // opencode
	// Workdir is the directory relative paths are in: codex's shell tool
	// sends one with ["apply_patch", PATCH] (repair keeps it).
	Workdir string `json:"workdir"`
}

func (applyPatch) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a patchArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	return preparePatch(env, cmp.Or(a.Input, a.Patch, a.PatchText), a.Workdir)
}

// preparePatch parses a patch and resolves every path it touches through
// the same checks as write_file; the action reports them all. Relative
// paths are in workdir when one is given.
func preparePatch(env *Env, input, workdir string) (*Action, error) {
	ops, err := parsePatch(input)
	if err != nil {
		return nil, err
	}
	pe := &patchEdit{env: env, ops: ops}
	seen := map[string]bool{}
	var all []Path
	resolve := func(name string) (Path, error) {
		if workdir != "" && !filepath.IsAbs(name) {
			name = filepath.Join(workdir, name)
		}
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
	if act.AlwaysAsk == "" {
		act.AlwaysAsk = unreadDeletes(env, ops, pe.paths)
	}
	return act, nil
}

// unreadDeletes is why a patch that deletes files the model has not read
// in this session is asked about every time: write_file refuses to
// overwrite such a file, and a deletion loses all of it. The question
// shows the whole text that goes. "" when every deleted file was read.
func unreadDeletes(env *Env, ops []patchOp, paths [][2]Path) string {
	if env.Reads == nil {
		return ""
	}
	var unread []Path
	for i, op := range ops {
		if _, seen := env.Reads.lookup(paths[i][0].Abs); op.kind == patchDelete && !seen {
			unread = append(unread, paths[i][0])
		}
	}
	if len(unread) == 0 {
		return ""
	}
	return "the patch deletes " + names(unread) + ", which the model has not read in this session; its whole text, shown above, goes."
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
	// mode is the permission bits of a file a Move to creates (its
	// source's) or of a deleted file (for undo); 0 for the default.
	mode fs.FileMode
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
			if changed := pe.env.Reads.changedSince(p, old); changed != "" {
				return nil, nil, fmt.Errorf("*** Delete File: %s:%s Read it again before deleting it", p.Display, changed)
			}
			out = append(out, fileChange{p: p, old: old, existed: true, deleted: true, mode: fileMode(p)})
			continue
		}
		if !exists {
			return nil, nil, fmt.Errorf("*** Update File: %s: %s", p.Display, notFound(p, err))
		}
		updated, how, err := applyHunks(ctx, old, op.hunks, p.Display)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
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
		mode := fileMode(p) // a script moved stays executable
		out = append(out, fileChange{p: to, updated: updated, mode: mode}, fileChange{p: p, old: old, existed: true, deleted: true, mode: mode})
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
		out = append(out, diff(c.p, &textChange{old: c.old, created: !c.existed, updated: c.updated}))
	}
	return out
}

func (pe *patchEdit) run(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
	cs, notes, err := pe.plan(ctx)
	if ctx.Err() != nil {
		return Failure("cancelled: the turn was cancelled before the patch was written; no file was changed")
	}
	if err != nil {
		return Failure("%v; no file was changed", err)
	}
	if pe.previewed && !sameChanges(cs, pe.shown) {
		return Failure("a file changed after the patch was shown for approval; no file was changed. Read the files again and redo the patch.")
	}
	// Every change was worked out above; write them in order, and undo
	// the written ones if a later write fails or the turn is cancelled
	// meanwhile, so the patch applies whole or not at all. The undo runs
	// after a cancel too: it puts back what was there.
	for i, c := range cs {
		if err := pe.apply(ctx, c); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = pe.undo(context.WithoutCancel(ctx), cs[j])
			}
			if ctx.Err() != nil {
				return Failure("cancelled: the turn was cancelled while the patch was written; no file was changed (earlier files were restored)")
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

// apply makes one change, unless the turn was cancelled: nothing is
// written once a cancel may have been answered.
func (pe *patchEdit) apply(ctx context.Context, c fileChange) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.deleted {
		if err := pe.env.beforeChange(ctx, c.p); err != nil {
			return err
		}
		if err := removeRegular(c.p); err != nil {
			return err
		}
		pe.env.afterChange(ctx, c.p)
		return nil
	}
	return pe.env.writeTextMode(ctx, c.p, c.updated, c.mode)
}

func (pe *patchEdit) undo(ctx context.Context, c fileChange) error {
	if c.existed {
		return pe.env.writeTextMode(ctx, c.p, c.old, c.mode)
	}
	return removeRegular(c.p)
}

// fileMode is the permission bits of the file at p (0 when they cannot
// be read: the default is used).
func fileMode(p Path) fs.FileMode {
	fi, err := statRegular(p)
	if err != nil {
		return 0
	}
	return fi.Mode().Perm()
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
// whitespace, indentation, quotes), like codex's seek_sequence. Only the
// lines a hunk removes or adds change: every other line keeps its bytes,
// its line ending (CRLF, LF, mixed), a byte-order mark and a missing final
// newline included; context lines are written back as the file has them;
// added lines take the file's most common line ending.
func applyHunks(ctx context.Context, text string, hunks []hunk, file string) (string, []string, error) {
	bom := ""
	if strings.HasPrefix(text, "\ufeff") {
		bom, text = "\ufeff", text[len("\ufeff"):]
	}
	lines := patchLines(text)
	texts := make([]string, len(lines))
	for i, l := range lines {
		texts[i] = l.text
	}
	eol := commonEOL(lines)
	m := &lineMatcher{ctx: ctx, lines: texts}
	type rep struct {
		at, n int
		new   []patchLine
	}
	var reps []rep
	var notes []string
	cursor := 0
	for i, h := range hunks {
		where := fmt.Sprintf("Update File %s, hunk %d (patch line %d)", file, i+1, h.line)
		if h.context != "" {
			at, how, err := m.seek([]string{h.context}, cursor, false)
			if err != nil {
				return "", nil, err
			}
			if at < 0 {
				return "", nil, fmt.Errorf("%s: the @@ line %q is not in the file.%s", where, clipLine(h.context, 120), nearHint(text, h.context))
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
			reps = append(reps, rep{at, 0, newPatchLines(h.new, eol)})
			continue
		}
		old, nw, keep := h.old, h.new, h.keep
		at, how, err := m.seek(old, cursor, h.eof)
		if err == nil && at < 0 && old[len(old)-1] == "" {
			old = old[:len(old)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw, keep = nw[:len(nw)-1], keep[:len(keep)-1]
			}
			at, how, err = m.seek(old, cursor, h.eof)
		}
		if err != nil {
			return "", nil, err
		}
		if at < 0 {
			return "", nil, fmt.Errorf("%s: its context and removed lines are not in the file (after line %d).%s", where, cursor, nearHint(text, strings.Join(h.old, "\n")))
		}
		if how == "normalising indentation" {
			region := make([]fileLine, len(old))
			for k := range old {
				region[k] = fileLine{text: lines[at+k].text}
			}
			if re, ok := reindent(region, old, nw); ok {
				nw = re
			}
		}
		if how != "" {
			notes = append(notes, fmt.Sprintf("%s hunk %d after %s", file, i+1, how))
		}
		out := newPatchLines(nw, eol)
		for k, j := range keep {
			if j >= 0 && j < len(old) {
				out[k] = lines[at+j]
			}
		}
		reps = append(reps, rep{at, len(old), out})
		cursor = at + len(old)
	}
	// A hunk adding at the end of the file may come before hunks further
	// up: apply them in file order, in one pass.
	sort.SliceStable(reps, func(a, b int) bool { return reps[a].at < reps[b].at })
	var result []patchLine
	next := 0
	for _, r := range reps {
		result = append(append(result, lines[next:r.at]...), r.new...)
		next = r.at + r.n
	}
	result = append(result, lines[next:]...)
	var b strings.Builder
	b.Grow(len(bom) + len(text))
	b.WriteString(bom)
	for i, l := range result {
		b.WriteString(l.text)
		if l.eol == "" && i < len(result)-1 {
			l.eol = eol // a last line without its newline, now followed by more
		}
		b.WriteString(l.eol)
	}
	return b.String(), notes, nil
}

// patchLine is a line of a file and its ending ("\r\n", "\n", or "" for
// a last line without one).
type patchLine struct{ text, eol string }

func patchLines(text string) []patchLine {
	src := splitFileLines(text)
	out := make([]patchLine, len(src))
	for i, l := range src {
		end := len(text)
		if i+1 < len(src) {
			end = src[i+1].start
		}
		out[i] = patchLine{text: l.text, eol: text[l.end:end]}
	}
	return out
}

// commonEOL is the line ending most of the file's lines have ("\n" when
// it has none).
func commonEOL(lines []patchLine) string {
	crlf, lf := 0, 0
	for _, l := range lines {
		switch l.eol {
		case "\r\n":
			crlf++
		case "\n":
			lf++
		}
	}
	if crlf > lf {
		return "\r\n"
	}
	return "\n"
}

func newPatchLines(texts []string, eol string) []patchLine {
	out := make([]patchLine, len(texts))
	for i, t := range texts {
		out[i] = patchLine{text: t, eol: eol}
	}
	return out
}

func nearHint(text, want string) string {
	if near := nearestLines(text, want); near != "" {
		return " The most similar lines in the file (→ tab, · trailing space):\n" + near
	}
	return " Read the file and copy its lines exactly."
}

// patchFromShell prepares a caught shell patch; its result says how it ran.
func patchFromShell(env *Env, input, workdir string) (*Action, error) {
	act, err := preparePatch(env, input, workdir)
	if err != nil {
		return nil, err
	}
	run := act.Run
	act.Run = func(ctx context.Context, progress func([]acp.ToolCallContent)) Result {
		r := run(ctx, progress)
		r.Output = "(apply_patch was run as crow's apply_patch tool, not in the shell.)\n" + r.Output
		return r
	}
	return act, nil
}
