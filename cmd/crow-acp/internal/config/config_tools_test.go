package config

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent"
)

// TestToolAndSessionKeys checks each top-level tool and session key: the
// file's value reaches `config show` (with its line) and the agent, its
// variable overrides it, and a bad value, in the file or the variable, is a
// usage error naming the line and key, or the variable.
func TestToolAndSessionKeys(t *testing.T) {
	cases := []struct {
		key, env string

		file, fileShow string // the TOML value as written, and as config show prints it
		fileAgent      any    // what the agent gets from the file value

		envVal, envShow string
		envAgent        any

		badFile, badFileMsg string
		badEnv, badEnvMsg   string

		agent func(agent.Config) any
	}{
		{
			key: "tools", env: "CROW_TOOLS",
			file: `"off"`, fileShow: "off", fileAgent: true,
			envVal: "on", envShow: "on", envAgent: false,
			badFile: `"maybe"`, badFileMsg: `unknown value "maybe": use on or off`,
			badEnv: "no", badEnvMsg: `tools: unknown value "no": use on or off (from env CROW_TOOLS)`,
			agent: func(ac agent.Config) any { return ac.NoTools },
		},
		{
			key: "command_timeout", env: "CROW_COMMAND_TIMEOUT",
			file: `"90s"`, fileShow: "1m30s", fileAgent: 90 * time.Second,
			envVal: "5m", envShow: "5m0s", envAgent: 5 * time.Minute,
			badFile: `"soon"`, badFileMsg: `"soon" is not a duration`,
			badEnv: "0s", badEnvMsg: "command_timeout: 0s is too short: it must be longer than 0 (from env CROW_COMMAND_TIMEOUT)",
			agent: func(ac agent.Config) any { return ac.CommandTimeout },
		},
		{
			key: "tool_output_limit", env: "CROW_TOOL_OUTPUT_LIMIT",
			file: `4096`, fileShow: "4096", fileAgent: 4096,
			envVal: "16384", envShow: "16384", envAgent: 16384,
			badFile: `-1`, badFileMsg: "-1 bytes is too small: at least 1024",
			badEnv: "512", badEnvMsg: "tool_output_limit: 512 bytes is too small: at least 1024 (from env CROW_TOOL_OUTPUT_LIMIT)",
			agent: func(ac agent.Config) any { return ac.ToolOutputLimit },
		},
		{
			key: "session_titles", env: "CROW_TITLES",
			file: `"model"`, fileShow: "model", fileAgent: true,
			envVal: "local", envShow: "local", envAgent: false,
			badFile: `"ai"`, badFileMsg: `unknown value "ai": use local or model`,
			badEnv: "ai", badEnvMsg: `session_titles: unknown value "ai": use local or model (from env CROW_TITLES)`,
			agent: func(ac agent.Config) any { return ac.ModelTitles },
		},
		{
			key: "list_page_size", env: "CROW_LIST_PAGE_SIZE",
			file: `20`, fileShow: "20", fileAgent: 20,
			envVal: "7", envShow: "7", envAgent: 7,
			badFile: `0`, badFileMsg: "0 is out of range: 1 to 500",
			badEnv: "501", badEnvMsg: "list_page_size: 501 is out of range: 1 to 500 (from env CROW_LIST_PAGE_SIZE)",
			agent: func(ac agent.Config) any { return ac.ListPageSize },
		},
		{
			key: "lease_ttl", env: "CROW_LEASE_TTL",
			file: `"1m"`, fileShow: "1m0s", fileAgent: time.Minute,
			envVal: "10s", envShow: "10s", envAgent: 10 * time.Second,
			badFile: `"500ms"`, badFileMsg: "500ms is too short: at least 1s",
			badEnv: "30", badEnvMsg: `env CROW_LEASE_TTL: "30" is not a duration`,
			agent: func(ac agent.Config) any { return ac.LeaseTTL },
		},
		{
			key: "prompt_usage", env: "CROW_PROMPT_USAGE",
			file: `"off"`, fileShow: "off", fileAgent: false,
			envVal: "on", envShow: "on", envAgent: true,
			badFile: `"yes"`, badFileMsg: `unknown value "yes": use on or off`,
			badEnv: "1", badEnvMsg: `prompt_usage: unknown value "1": use on or off (from env CROW_PROMPT_USAGE)`,
			agent: func(ac agent.Config) any { return ac.PromptUsage },
		},
	}
	dir := t.TempDir()
	load := func(t *testing.T, doc string, env map[string]string) (*Settings, string, error) {
		return loadTestConfigIn(t, dir, doc, env)
	}
	show := func(t *testing.T, cfg *Settings, key string) Row {
		t.Helper()
		for _, r := range cfg.Rows() {
			if r.Key == key {
				return r
			}
		}
		t.Fatalf("config show has no %s Row", key)
		return Row{}
	}
	// The key sits on line 3, below a table-less preamble.
	doc := func(key, v string) string { return "# crow-acp\nmodel = \"m\"\n" + key + " = " + v + "\n" }

	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			cfg, file, err := load(t, doc(c.key, c.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := show(t, cfg, c.key); r.Value != c.fileShow || r.From.String() != "file "+file+":3" {
				t.Errorf("file: config show says %s (%s), want %s (file %s:3)", r.Value, r.From, c.fileShow, file)
			}
			if got := c.agent(cfg.Agent("test")); got != c.fileAgent {
				t.Errorf("file: the agent got %v, want %v", got, c.fileAgent)
			}

			cfg, _, err = load(t, doc(c.key, c.file), map[string]string{c.env: c.envVal})
			if err != nil {
				t.Fatal(err)
			}
			if r := show(t, cfg, c.key); r.Value != c.envShow || r.From.String() != "env "+c.env {
				t.Errorf("env over file: config show says %s (%s), want %s (env %s)", r.Value, r.From, c.envShow, c.env)
			}
			if got := c.agent(cfg.Agent("test")); got != c.envAgent {
				t.Errorf("env over file: the agent got %v, want %v", got, c.envAgent)
			}

			_, file, err = load(t, doc(c.key, c.badFile), nil)
			var ue *Error
			if want := file + ":3: " + c.key + ": " + c.badFileMsg; !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
				t.Errorf("bad file value %s: got %v, want a usage error containing %q", c.badFile, err, want)
			}

			// The file's value is valid; the variable's is not.
			_, _, err = load(t, doc(c.key, c.file), map[string]string{c.env: c.badEnv})
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.badEnvMsg) {
				t.Errorf("bad %s=%s: got %v, want a usage error containing %q", c.env, c.badEnv, err, c.badEnvMsg)
			}
		})
	}
}

// TestToolAndSessionDefaults: without the file or the variables, the
// defaults of the packages that own the settings apply.
func TestToolAndSessionDefaults(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cf := AddFlags(fs, FlagsAll)
	cfg, err := Load(cf, func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] })
	if err != nil {
		t.Fatal(err)
	}
	ac := cfg.Agent("test")
	if ac.NoTools || ac.ModelTitles || ac.CommandTimeout != 2*time.Minute || ac.ToolOutputLimit != 0 || ac.MaxModelCalls != 0 ||
		ac.ListPageSize != 50 || ac.LeaseTTL != agent.DefaultLeaseTTL || !ac.PromptUsage {
		t.Errorf("defaults: %+v", ac)
	}
	for _, r := range cfg.Rows() {
		switch r.Key {
		case "tools", "command_timeout", "tool_output_limit", "session_titles", "list_page_size", "lease_ttl", "prompt_usage":
			if r.From != fromDefault {
				t.Errorf("%s comes from %s, want default", r.Key, r.From)
			}
		}
	}
}
