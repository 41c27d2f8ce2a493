package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// The tool and session settings are top-level keys of the file, each also
// read from the CROW_* variable that set it before the file knew it. Their
// rules live here once: the file's errors name the line and the key, the
// environment's name the variable.

// checkTools checks a switch (tools, prompt_usage): on or off.
func checkTools(s string) error {
	if s != "on" && s != "off" {
		return fmt.Errorf("unknown value %q: use on or off", s)
	}
	return nil
}

func checkSessionTitles(s string) error {
	if s != "local" && s != "model" {
		return fmt.Errorf("unknown value %q: use local or model", s)
	}
	return nil
}

func checkToolOutputLimit(n int) error {
	if n < 1024 {
		return fmt.Errorf("%d bytes is too small: at least 1024", n)
	}
	return nil
}

func checkListPageSize(n int) error {
	if n < 1 || n > persistence.MaxListLimit {
		return fmt.Errorf("%d is out of range: 1 to %d", n, persistence.MaxListLimit)
	}
	return nil
}

func checkCommandTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s is too short: it must be longer than 0", d)
	}
	return nil
}

// checkLeaseTTL: the lease is renewed every TTL/3; below a second any
// stall of the process would let another one take its sessions.
func checkLeaseTTL(d time.Duration) error {
	if d < time.Second {
		return fmt.Errorf("%s is too short: at least 1s", d)
	}
	return nil
}

// validateToolsAndSessions checks the file's tool and session keys.
func (f *loadedFile) validateToolsAndSessions() error {
	c := &f.cfg
	for _, k := range []struct {
		key   string
		v     *string
		check func(string) error
	}{{"tools", c.Tools, checkTools}, {"session_titles", c.SessionTitles, checkSessionTitles}, {"prompt_usage", c.PromptUsage, checkTools}} {
		if k.v != nil {
			if err := k.check(*k.v); err != nil {
				return f.errorAt(k.key, "%v", err)
			}
		}
	}
	for _, k := range []struct {
		key   string
		v     *int
		check func(int) error
	}{{"tool_output_limit", c.ToolOutputLimit, checkToolOutputLimit}, {"list_page_size", c.ListPageSize, checkListPageSize}} {
		if k.v != nil {
			if err := k.check(*k.v); err != nil {
				return f.errorAt(k.key, "%v", err)
			}
		}
	}
	for _, k := range []struct {
		key   string
		v     *string
		check func(time.Duration) error
	}{{"command_timeout", c.CommandTimeout, checkCommandTimeout}, {"lease_ttl", c.LeaseTTL, checkLeaseTTL}} {
		if k.v == nil {
			continue
		}
		d, err := time.ParseDuration(*k.v)
		if err != nil {
			return f.errorAt(k.key, "%q is not a duration (e.g. \"30s\", \"2m\")", *k.v)
		}
		if err := k.check(d); err != nil {
			return f.errorAt(k.key, "%v", err)
		}
	}
	return nil
}

// resolveToolsAndSessions applies env > file > default (there are no
// flags for these); validateToolsAndSessions checks what the environment
// set.
func (c *Settings) resolveToolsAndSessions(r resolver, fc fileConfig) error {
	var err error
	c.tools = r.str("", "CROW_TOOLS", fc.Tools, "tools", "on")
	if c.commandTimeout, err = r.duration("CROW_COMMAND_TIMEOUT", fc.CommandTimeout, "command_timeout", tool.DefaultCommandTimeout); err != nil {
		return err
	}
	if c.toolOutputLimit, err = r.int("", "CROW_TOOL_OUTPUT_LIMIT", fc.ToolOutputLimit, "tool_output_limit", request.DefaultToolOutputLimit); err != nil {
		return err
	}
	c.titles = r.str("", "CROW_TITLES", fc.SessionTitles, "session_titles", "local")
	c.promptUsage = r.str("", "CROW_PROMPT_USAGE", fc.PromptUsage, "prompt_usage", "on")
	if c.listPageSize, err = r.int("", "CROW_LIST_PAGE_SIZE", fc.ListPageSize, "list_page_size", persistence.DefaultListLimit); err != nil {
		return err
	}
	if c.leaseTTL, err = r.duration("CROW_LEASE_TTL", fc.LeaseTTL, "lease_ttl", agent.DefaultLeaseTTL); err != nil {
		return err
	}
	return nil
}

// validateToolsAndSessions checks the resolved values; a bad one can only
// come from the environment here, the file's were checked with their lines.
func (c *Settings) validateToolsAndSessions() error {
	checks := []struct {
		key  string
		err  error
		from Source
	}{
		{"tools", checkTools(c.tools.V), c.tools.From},
		{"command_timeout", checkCommandTimeout(c.commandTimeout.V), c.commandTimeout.From},
		{"tool_output_limit", checkToolOutputLimit(c.toolOutputLimit.V), c.toolOutputLimit.From},
		{"session_titles", checkSessionTitles(c.titles.V), c.titles.From},
		{"list_page_size", checkListPageSize(c.listPageSize.V), c.listPageSize.From},
		{"lease_ttl", checkLeaseTTL(c.leaseTTL.V), c.leaseTTL.From},
		{"prompt_usage", checkTools(c.promptUsage.V), c.promptUsage.From},
	}
	for _, k := range checks {
		if k.err != nil {
			return Usagef("%s: %v (from %s)", k.key, k.err, k.from)
		}
	}
	return nil
}

// toolAndSessionRows are the settings `config show` lists, named by their
// file keys.
func (c *Settings) toolAndSessionRows() (tools, sessions []Row) {
	tools = []Row{
		{"tools", c.tools.V, c.tools.From},
		{"command_timeout", c.commandTimeout.V.String(), c.commandTimeout.From},
		{"tool_output_limit", strconv.Itoa(c.toolOutputLimit.V), c.toolOutputLimit.From},
	}
	sessions = []Row{
		{"session_titles", c.titles.V, c.titles.From},
		{"list_page_size", strconv.Itoa(c.listPageSize.V), c.listPageSize.From},
		{"lease_ttl", c.leaseTTL.V.String(), c.leaseTTL.From},
		{"prompt_usage", c.promptUsage.V, c.promptUsage.From},
	}
	return tools, sessions
}
