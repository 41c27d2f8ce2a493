package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/chat"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/terminal"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

const chatUsage = `Usage: crow-acp chat [flags]
       crow-acp                  (in a terminal: the same)

An interactive conversation in the terminal with the same agent, session
store and permission questions editors get: a chat session is listed by
"crow-acp sessions list" and in an editor's history, and an editor's
session can be continued here. --session ID resumes a stored session,
--continue the latest one of this directory; its history is shown first.

Answers are rendered as Markdown on a terminal (plain text in a pipe, with
NO_COLOR or TERM=dumb). A permission question shows an edit's diff and a
command line in full; a command's output is shown as the agent streams it
and when it ends.

@PATH attaches a file of the project (Tab completes it; images too);
!COMMAND runs a command in the project and offers its output to the model
with the next prompt. A prompt typed while a turn runs is queued and sent
when it ends (/unqueue drops the queue).

Keys: Enter sends; a line ending with \ continues on the next; a line of
""" starts and ends a block. Ctrl-C cancels the running turn; Ctrl-C twice
or Ctrl-D at an empty prompt quits. Up/Down walk the history (kept in
$XDG_STATE_HOME/crow-acp/chat_history); Tab completes slash commands.
/help lists the commands: the chat's (/sessions, /resume ID, /new, /diff,
/init, /quit) and the agent's (/compact).
`

func runChat(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet("chat", chatUsage)
	var opt execOptions
	var cont bool
	fs.StringVar(&opt.session, "session", "", "resume the stored session ID")
	fs.BoolVar(&cont, "continue", false, "resume the latest session of this directory")
	fs.BoolVar(&cont, "c", false, "short for --continue")
	fs.StringVar(&opt.cwd, "cwd", "", "project directory the agent works in (default: the current directory, or the session's)")
	fs.BoolVar(&opt.thoughts, "thoughts", false, "show the model's reasoning (default: one folded line)")
	cf := config.AddFlags(fs, config.FlagsStore|config.FlagsModel|config.FlagsLog)
	pos, cfg, err := configured(fs, cf, args, e)
	if err == nil {
		err = wantArgs(fs, pos, 0, 0, "")
	}
	if err == nil && cont && opt.session != "" {
		err = config.Usagef("chat: --continue and --session exclude each other")
	}
	if err != nil {
		return e.fail(err)
	}
	log, store, cwd, closeAll, err := openTerminal(ctx, cfg, opt)
	if err != nil {
		return e.fail(err)
	}
	defer closeAll()
	if cont {
		latest, err := sessions.Stored(ctx, store, cwd, 1, false, chatListed)
		if err != nil {
			return e.fail(err)
		}
		if len(latest) == 0 {
			fmt.Fprintf(e.std.err, "crow-acp: no session in %s yet: starting a new one\n", cwd)
		} else {
			opt.session = latest[0].ID
		}
	}

	// Ctrl-C cancels a turn, twice quits: the chat sees each one.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)

	c, err := chat.New(chat.Options{
		In: e.std.in, Out: e.std.out, Cwd: cwd, HistoryFile: chatHistoryPath(e.getenv),
		Thoughts: opt.thoughts, Getenv: e.getenv, Signals: signals, Model: cfg.Model.V,
		Sessions: func(ctx context.Context, dir string) ([]persistence.Session, error) {
			return sessions.Stored(ctx, store, dir, 20, false, chatListed)
		},
	})
	if err != nil {
		return e.fail(err)
	}
	defer c.Close()
	client, stopAgent, err := startAgent(ctx, cfg, store, c.Client(), log, "chat")
	if err != nil {
		return e.fail(fmt.Errorf("chat: %w", err))
	}
	defer stopAgent()
	err = c.Run(client, opt.session)
	if errors.Is(err, chat.ErrNotFound) {
		return e.fail(&sessions.NotFoundError{ID: opt.session})
	}
	if err != nil {
		return e.fail(fmt.Errorf("chat: %w", err))
	}
	return exitOK
}

// chatHistoryPath is where the line editor keeps the prompts typed:
// $XDG_STATE_HOME/crow-acp/chat_history (~/.local/state/...); "" (no
// history) without a home.
func chatHistoryPath(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "crow-acp", "chat_history")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "crow-acp", "chat_history")
	}
	return ""
}

// interactive reports whether a person sits at both ends of the process:
// then a bare "crow-acp" chats. Editors spawn it with pipes.
func interactive(std stdio) bool {
	return terminal.IsTerminal(std.in) && terminal.IsTerminal(std.out)
}

// chatListed is what the chat offers to continue or resume: the sessions a
// user started, not archived ones or subagents' children.
func chatListed(s *persistence.Session) bool {
	return !agent.IsArchived(s) && agent.SubagentParent(s) == ""
}
