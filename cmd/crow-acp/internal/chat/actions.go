package chat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// shell runs a !command in the session's directory while the person may
// type (Ctrl-C stops it; lines are queued), shows its output as it comes,
// and keeps it to offer to the model with the next prompt.
func (c *Chat) shell(command string) (quit bool) {
	c.drainInterrupts()
	c.ui.Finish()
	fmt.Fprintf(c.out, "%s\n", c.dimmed("$ "+termsafe.Line(command)))
	c.setBusy(true)
	defer c.setBusy(false)
	stop := make(chan struct{})
	done := make(chan shellRun, 1)
	go func() { done <- runShell(c.opt.Cwd, command, c.out, stop) }()
	stopping := false
	halt := func() {
		if !stopping {
			stopping = true
			close(stop)
		}
	}
	for {
		select {
		case run := <-done:
			c.flushScreen()
			c.keep(run)
			mark := "✓"
			if run.status != "exit status 0" {
				mark = "✗"
			}
			c.note("%s %s · the output goes to the model with your next prompt", mark, run.status)
			return false
		case <-c.cancelReq:
			halt()
		case r := <-c.typed():
			if c.onTyped(r) {
				halt()
			}
		case <-c.quitting:
			halt()
			<-done
			return true
		}
	}
}

// keep adds a command's run to those offered with the next prompt,
// dropping the oldest past maxShellRuns.
func (c *Chat) keep(run shellRun) {
	c.pending = append(c.pending, run)
	if n := len(c.pending) - maxShellRuns; n > 0 {
		c.pending = append([]shellRun(nil), c.pending[n:]...)
	}
}

func (c *Chat) flushScreen() {
	if c.screen != nil {
		c.screen.flush()
	}
}

func (c *Chat) dimmed(s string) string {
	if !c.color {
		return s
	}
	return sgrDim + s + sgrReset
}

// showDiff writes what the session's edits changed, as unified diffs.
func (c *Chat) showDiff() {
	c.mu.Lock()
	out := c.changes.render(c.opt.Cwd, c.color)
	c.mu.Unlock()
	if out == "" {
		c.note("no file changed in this session yet (/diff shows the edits the agent makes while the chat watches, and a resumed session's)")
		return
	}
	c.ui.Finish()
	fmt.Fprint(c.out, out)
}

// initPrompt asks the model for a starter AGENTS.md.
func initPrompt(replace bool) string {
	p := "Explore this project and write a starter AGENTS.md at its root, for coding agents working on it. " +
		"Find out, from its build files, CI configuration, README and code: the exact commands that build it, " +
		"run its tests (all, and one test) and lint it; how the code is laid out (the main directories and what each holds); " +
		"and the conventions to follow (style, naming, error handling, tests, commits) as the code shows them. " +
		"Keep it short (under 100 lines), factual and specific to this project: write no command you have not seen used or defined. "
	if replace {
		return p + "An AGENTS.md exists: read it first, keep what is still true, and rewrite it (the user asked for this)."
	}
	return p + "There is no AGENTS.md yet: create it. If you find one after all, do not overwrite it: stop and say so."
}

// initProject is /init: a turn asking for AGENTS.md, after the person
// confirms replacing an existing one.
func (c *Chat) initProject(conn Conn) (quit bool, err error) {
	replace := false
	_, statErr := os.Lstat(filepath.Join(c.opt.Cwd, "AGENTS.md"))
	switch {
	case statErr == nil:
		ans, err := c.readLine("AGENTS.md exists: have the model rewrite it? [y/N] ")
		if err != nil || !strings.EqualFold(strings.TrimSpace(ans), "y") && !strings.EqualFold(strings.TrimSpace(ans), "yes") {
			c.note("AGENTS.md is left as it is")
			return false, nil
		}
		replace = true
	case !errors.Is(statErr, os.ErrNotExist):
		return false, fmt.Errorf("AGENTS.md: %w", statErr)
	}
	return c.turn(conn, []acp.ContentBlock{acp.TextBlock(initPrompt(replace))}), nil
}
