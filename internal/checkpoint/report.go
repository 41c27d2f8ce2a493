package checkpoint

import (
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Text is the report for a person: one line per file (restored, deleted,
// skipped with its reason and diff, not covered), then what the undo could
// not cover. Paths and diffs come from the workspace: made safe for a
// terminal.
func (r *Report) Text() string {
	var b strings.Builder
	what := "undo"
	if r.Redo {
		what = "redo"
	}
	switch {
	case r.Interrupted:
		fmt.Fprintf(&b, "an interrupted %s of session %s (from seq %d) was found; each file is as follows:\n", what, termsafe.Line(r.SessionID), r.FromTurn)
	case r.DryRun:
		fmt.Fprintf(&b, "%s would change (dry run, nothing was changed):\n", what)
	}
	changed := 0
	for _, f := range r.Files {
		path := termsafe.Line(f.Path)
		verb := f.Action
		if r.DryRun && (f.Action == persistence.UndoRestored || f.Action == persistence.UndoDeleted) {
			verb = "would be " + f.Action
		}
		switch f.Action {
		case persistence.UndoUnchanged:
			continue
		case persistence.UndoNotCovered:
			verb = "not covered"
		}
		changed++
		line := verb + " " + path
		if f.Reason != "" {
			line += ": " + termsafe.Line(f.Reason)
		}
		b.WriteString(line + "\n")
		if f.Diff != "" {
			for _, l := range strings.SplitAfter(termsafe.Text(f.Diff), "\n") {
				if l != "" {
					b.WriteString("    " + l)
				}
			}
			if !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
		}
	}
	if changed == 0 && !r.Interrupted {
		b.WriteString("no file to change\n")
	}
	for _, n := range r.NotCovered {
		b.WriteString("not covered: " + termsafe.Line(n) + "\n")
	}
	return b.String()
}

// Counts are how many files the report restored, deleted and skipped.
func (r *Report) Counts() (restored, deleted, skipped int) {
	for _, f := range r.Files {
		switch f.Action {
		case persistence.UndoRestored:
			restored++
		case persistence.UndoDeleted:
			deleted++
		case persistence.UndoSkipped, persistence.UndoNotCovered:
			skipped++
		}
	}
	return
}
