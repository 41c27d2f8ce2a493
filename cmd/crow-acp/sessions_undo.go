package main

import (
	"context"
	"flag"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
)

const undoUsage = `Usage: crow-acp sessions undo ID [--to N] [--dry-run] [--force]

Takes back what the agent did from prompt N on (1-based, as the conversation
shows the prompts; default: the last prompt): the files its tools changed go
back to their bytes and modes (files they created are deleted), and in a git
work tree what its commands changed too; the prompts leave the model's
context (kept and marked in sessions show). A file changed since the agent
wrote it is left alone and shown with a diff unless --force. Prints each file
restored, deleted or skipped. sessions redo takes the undo back while
nothing new happened in the session.
`

const redoUsage = `Usage: crow-acp sessions redo ID [--dry-run] [--force]

Re-applies the session's last undo while nothing new happened in it: the
files go back to what the undo found, the prompts come back to the context.
`

func sessionsUndo(redo bool) func(ctx context.Context, e *env, args []string) error {
	name, usage := "undo", undoUsage
	if redo {
		name, usage = "redo", redoUsage
	}
	return func(ctx context.Context, e *env, args []string) error {
		var o sessions.UndoOptions
		cfg, id, err := oneSession(name, usage, args, e, func(fs *flag.FlagSet) {
			if !redo {
				fs.IntVar(&o.To, "to", 0, "go back to before prompt `N` (1-based; default: the last prompt)")
			}
			fs.BoolVar(&o.DryRun, "dry-run", false, "say what would be done, change nothing")
			fs.BoolVar(&o.Force, "force", false, "also overwrite files changed since the agent wrote them")
		})
		if err != nil {
			return err
		}
		if o.To < 0 {
			return config.Usagef("sessions undo: --to must be a prompt number, 1 or more")
		}
		o.Trees = checkpoint.DefaultTreesDir(e.getenv)
		if redo {
			return sessions.Redo(ctx, cfg, e.io(), id, o)
		}
		return sessions.Undo(ctx, cfg, e.io(), id, o)
	}
}
