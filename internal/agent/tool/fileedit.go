package tool

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/acp"
)

// protectedWrite is why a write to p is asked about every time, or "".
func protectedWrite(p Path) string {
	if !p.Protected {
		return ""
	}
	return p.Why
}

// maxDiffBytes bounds the old and new text of one diff sent to the client
// (permission request and result): a bigger change is described in a line
// instead, so a huge file does not become a multi-megabyte frame.
const maxDiffBytes = 1 << 20

// textChange is an edit worked out in memory: the file's current text and what
// it becomes.
type textChange struct {
	old     string
	created bool // the file does not exist yet
	updated string
	output  string // what the model reads once it is written
}

// fileEdit is a prepared write_file or edit_file. Preview and Run both work out
// the change with plan, so what the user approves is what gets written.
type fileEdit struct {
	env       *Env
	p         Path
	mayCreate bool // a missing file is created (write_file)
	// apply computes the new text from the current one; its error is the
	// reason the edit cannot be made.
	apply func(old string, created bool) (updated, output string, err error)

	previewed bool
	shown     *textChange // what the preview showed; nil if it failed
}

// plan reads the file (through the client when it offers reads, as every
// tool does) and applies the edit in memory.
func (e *fileEdit) plan(ctx context.Context) (*textChange, error) {
	old, err := e.env.readText(ctx, e.p)
	created := errors.Is(err, errNotExist)
	if err != nil && !(created && e.mayCreate) {
		return nil, errors.New(notFound(e.p, err))
	}
	updated, output, err := e.apply(old, created)
	if err != nil {
		return nil, err
	}
	return &textChange{old: old, created: created, updated: updated, output: output}, nil
}

func (e *fileEdit) preview(ctx context.Context) ([]acp.ToolCallContent, error) {
	e.previewed = true
	c, err := e.plan(ctx)
	if err != nil {
		return nil, err
	}
	e.shown = c
	return []acp.ToolCallContent{diff(e.p, c)}, nil
}

func (e *fileEdit) run(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
	c, err := e.plan(ctx)
	if err != nil {
		return Failure("%v", err)
	}
	// The user approved the diff of the file as it was then (or was told
	// the edit could not apply): if it has changed since (the editor or
	// another process wrote it), writing now would do something they did
	// not see. A window remains between this read and the write; neither
	// the disk nor ACP offers a compare-and-swap write.
	if e.previewed && (e.shown == nil || c.created != e.shown.created || c.old != e.shown.old) {
		return Failure("%s changed after the edit was shown for approval; nothing was written. Read the file again and redo the edit.", e.p.Display)
	}
	if err := e.env.writeText(ctx, e.p, c.updated); err != nil {
		return Failure("write %s: %v", e.p.Display, err)
	}
	e.env.Reads.saw(e.p.Abs, c.updated)
	return Result{Output: c.output, Content: []acp.ToolCallContent{diff(e.p, c)}}
}

// diff is the client's view of a change (oldText nil for a new file), or a
// line saying what changes when it is too big to show.
func diff(p Path, c *textChange) acp.ToolCallContent {
	if len(c.old)+len(c.updated) > maxDiffBytes {
		return acp.ToolText(fmt.Sprintf("%s: %d bytes become %d bytes; the diff is too large to show (over %d KiB).",
			p.Display, len(c.old), len(c.updated), maxDiffBytes>>10))
	}
	d := &acp.Diff{Path: p.ClientPath(), NewText: c.updated}
	if !c.created {
		d.OldText = ptr(c.old)
	}
	return acp.ToolCallContent{Diff: d}
}
