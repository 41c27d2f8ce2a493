package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// slashCommand is a command the user types as the first text of a prompt
// ("/compact keep the API notes"). Only commands that really work are
// registered; they are advertised with available_commands_update.
type slashCommand struct {
	name        string
	description string
	hint        string // input hint; "" = takes no input
	// run handles the command; input is the text after the name.
	run func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, input string) (acp.StopReason, error)
}

// slashCommands lists the registered commands, in the order advertised.
func (a *Agent) slashCommands() []slashCommand {
	cmds := []slashCommand{compactCommand}
	if a.lifecycle.forker() != nil {
		cmds = append(cmds, forkCommand)
	}
	if a.undo.undoing() {
		cmds = append(cmds, undoCommand, rewindCommand, redoCommand)
	}
	cmds = append(cmds, permissionsCommand)
	return cmds
}

// parseSlashCommand finds a registered command at the start of the prompt.
func (a *Agent) parseSlashCommand(blocks []acp.ContentBlock) (*slashCommand, string) {
	if len(blocks) == 0 || blocks[0].Text == nil {
		return nil, ""
	}
	text := strings.TrimSpace(blocks[0].Text.Text)
	if !strings.HasPrefix(text, "/") {
		return nil, ""
	}
	name, input, _ := strings.Cut(text[1:], " ")
	for _, c := range a.slashCommands() {
		if c.name == name {
			return &c, strings.TrimSpace(input)
		}
	}
	return nil, ""
}

// slashCommand runs the prompt if it is a slash command (handled false:
// it is not one and goes to the model); the turn's lease is held.
func (a *Agent) slashCommand(ctx context.Context, sess *session, s *persistence.Session, prompt []acp.ContentBlock) (stop acp.StopReason, handled bool, err error) {
	cmd, input := a.parseSlashCommand(prompt)
	if cmd == nil {
		return "", false, nil
	}
	stop, err = cmd.run(ctx, a, sess, s, input)
	return stop, true, err
}

// availableCommands is the payload of available_commands_update.
func (a *Agent) availableCommands() []acp.AvailableCommand {
	cmds := a.slashCommands()
	out := make([]acp.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := acp.AvailableCommand{Name: c.name, Description: c.description}
		if c.hint != "" {
			ac.Input = &acp.AvailableCommandInput{Hint: c.hint}
		}
		out = append(out, ac)
	}
	return out
}

// reply sends text as the agent's answer to a slash command.
func (a *Agent) reply(ctx context.Context, sess *session, text string) (acp.StopReason, error) {
	a.sendUpdate(ctx, sess, agentText(text))
	return acp.StopEndTurn, nil
}

// undoReply answers an undo: errUndo as text, anything else an error.
func (a *Agent) undoReply(ctx context.Context, sess *session, text string, err error) (acp.StopReason, error) {
	var u *errUndo
	if errors.As(err, &u) {
		return a.reply(ctx, sess, "[Undo: "+u.msg+".]\n")
	}
	if err != nil {
		return "", err
	}
	return a.reply(ctx, sess, text)
}

var undoCommand = slashCommand{
	name:        "undo",
	description: "Undo the last prompt: its files go back to how they were, its messages leave the conversation (--force also overwrites files changed since)",
	hint:        "[--force]",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, input string) (acp.StopReason, error) {
		r, err := undoArgs(input, false)
		if err != nil {
			return a.reply(ctx, sess, "[Usage: /undo [--force]: "+err.Error()+".]\n")
		}
		res, err := a.undo.revert(ctx, sess, s, r)
		if err != nil {
			return a.undoReply(ctx, sess, "", err)
		}
		return a.reply(ctx, sess, reportText(fmt.Sprintf("[Undid prompt %d.]", res.prompt.Number), res.report))
	},
}

var rewindCommand = slashCommand{
	name:        "rewind",
	description: "List the prompts; /rewind N goes back to before prompt N (files and conversation) and shows its text to send again",
	hint:        "[N] [--force]",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, input string) (acp.StopReason, error) {
		r, err := undoArgs(input, true)
		if err != nil {
			return a.reply(ctx, sess, "[Usage: /rewind [N] [--force]: "+err.Error()+".]\n")
		}
		if r.to == 0 {
			st := a.undo.checkpoints(sess)
			if st == nil {
				return "", errors.New("rewind: the session's lease is not held")
			}
			ps, err := a.undo.prompts(ctx, st, s.ID)
			if err != nil {
				return "", err
			}
			return a.reply(ctx, sess, promptList(ps))
		}
		res, err := a.undo.revert(ctx, sess, s, r)
		if err != nil {
			return a.undoReply(ctx, sess, "", err)
		}
		text := reportText(fmt.Sprintf("[Rewound to before prompt %d.]", res.prompt.Number), res.report)
		text += "\nPrompt " + strconv.Itoa(res.prompt.Number) + " was (edit it and send it again):\n\n" + fenced(res.prompt.Text)
		return a.reply(ctx, sess, text)
	},
}

var redoCommand = slashCommand{
	name:        "redo",
	description: "Redo the last undo, while nothing new happened in the session",
	hint:        "[--force]",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, input string) (acp.StopReason, error) {
		r, err := undoArgs(input, false)
		if err != nil {
			return a.reply(ctx, sess, "[Usage: /redo [--force]: "+err.Error()+".]\n")
		}
		rep, err := a.undo.redo(ctx, sess, s, r.dryRun, r.force)
		if err != nil {
			return a.undoReply(ctx, sess, "", err)
		}
		return a.reply(ctx, sess, reportText("[Redid the last undo.]", rep))
	},
}

// forkCommand is /fork, for clients without a fork button: the session is
// copied as it stands (its finished turns) and the user told the new id.
var forkCommand = slashCommand{
	name:        "fork",
	description: "Copy this conversation into a new session (history, mode, model and settings) to try another way there; this one goes on unchanged",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, _ string) (acp.StopReason, error) {
		fork, st, err := a.lifecycle.forkFrom(ctx, sess, nil)
		if err != nil {
			return "", err
		}
		// The frame log has the command in the source's stream; the
		// fork's starts, as after session/fork, with its creation.
		a.record(ctx, fork.ID, persistence.EventSessionCreated, map[string]any{"forkedFrom": s.ID, "via": "/fork"})
		text := fmt.Sprintf("[Forked into session %s (%d messages copied). Open it from your editor's session history, "+
			"or read it with `crow-acp sessions show %s`. This session goes on unchanged.]\n\n", fork.ID, st.Messages, fork.ID)
		a.sendUpdate(ctx, sess, acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(text)}})
		return acp.StopEndTurn, nil
	},
}

// compactCommand is /compact [focus]: summarise all but the most recent
// messages now, optionally focused on what the user names.
var compactCommand = slashCommand{
	name:        "compact",
	description: "Summarise the older part of the conversation to free context (the originals are kept and can be expanded again)",
	hint:        "optional focus for the summary",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, input string) (acp.StopReason, error) {
		err := a.build.CompactNow(ctx, &sess.req, s, input)
		switch {
		case ctx.Err() != nil:
			return acp.StopCancelled, nil
		case err == nil:
			return acp.StopEndTurn, nil
		case errors.Is(err, compaction.ErrNothingToCompact), errors.Is(err, compaction.ErrStalled):
			return acp.StopEndTurn, nil // the client was told why
		default:
			return "", err
		}
	},
}

// permissionsCommand is /permissions: the "always" rules of the session's
// project, and revoking them (crow-acp permissions does the same from a
// shell).
var permissionsCommand = slashCommand{
	name:        "permissions",
	description: "List this project's \"always allow/reject\" rules; /permissions revoke ID... or revoke all deletes them",
	hint:        "[revoke ID...|all]",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, input string) (acp.StopReason, error) {
		args := strings.Fields(input)
		if len(args) == 0 {
			rules, err := a.store.ListPermissionRules(ctx, s.Cwd)
			if err != nil {
				return "", storeError("list permission rules", err)
			}
			if len(rules) == 0 {
				return a.reply(ctx, sess, "[No \"always\" rules for this project.]\n")
			}
			return a.reply(ctx, sess, "Permission rules of this project (/permissions revoke ID... or all):\n\n"+rulesTable(rules))
		}
		if args[0] != "revoke" || len(args) == 1 {
			return a.reply(ctx, sess, "[Usage: /permissions, or /permissions revoke ID... | all.]\n")
		}
		var gone []persistence.PermissionRule
		var err error
		if len(args) == 2 && args[1] == "all" {
			gone, err = a.store.ClearPermissionRules(ctx, s.Cwd)
		} else {
			ids := make([]int64, 0, len(args)-1)
			for _, f := range args[1:] {
				id, perr := strconv.ParseInt(f, 10, 64)
				if perr != nil || id < 1 {
					return a.reply(ctx, sess, fmt.Sprintf("[%s is not a rule ID: /permissions lists them.]\n", markdownLine(f)))
				}
				ids = append(ids, id)
			}
			gone, err = a.store.DeletePermissionRules(ctx, s.Cwd, ids)
		}
		var unknown *persistence.UnknownRulesError
		if errors.As(err, &unknown) {
			return a.reply(ctx, sess, "["+unknown.Error()+" in this project; nothing was revoked.]\n")
		}
		if err != nil {
			return "", storeError("revoke permission rules", err)
		}
		if len(gone) == 0 {
			return a.reply(ctx, sess, "[No \"always\" rules for this project: nothing to revoke.]\n")
		}
		return a.reply(ctx, sess, fmt.Sprintf("Revoked %d rule(s); crow-acp asks again for these:\n\n%s", len(gone), rulesTable(gone)))
	},
}

// rulesTable is rules as a Markdown table. Keys hold commands and paths
// from the model's calls: escaped so that they stay text in one cell.
func rulesTable(rules []persistence.PermissionRule) string {
	var b strings.Builder
	b.WriteString("| ID | decision | what | granted |\n| --- | --- | --- | --- |\n")
	for _, r := range rules {
		decision := "always allow"
		if !r.Allow {
			decision = "always reject"
		}
		granted := r.CreatedAt.UTC().Format("2006-01-02 15:04")
		if r.SessionID != "" {
			granted += " in session " + markdownLine(r.SessionID)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", r.ID, decision, markdownLine(r.Key), granted)
	}
	return b.String()
}
