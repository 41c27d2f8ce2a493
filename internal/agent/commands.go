package agent

import (
	"context"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
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
