package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// Issue 28 item 1: the agent's system prompt is reached by settings: the
// file's top-level keys, their CROW_* variables (which win), and per model
// in [[models]].
func TestSystemPromptSettingsReachTheAgent(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/c.toml"
	doc := `model = "a"
system_prompt = "FILE BASE"
system_prompt_append = """
FILE EXTRA
"""

[[models]]
name = "a"

[[models]]
name = "b"
system_prompt = "B BASE"
system_prompt_append = "B EXTRA"
`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string) *Settings {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		cf := AddFlags(fs, FlagsAll)
		if err := fs.Parse([]string{"--config", file}); err != nil {
			t.Fatal(err)
		}
		env["HOME"] = dir
		cfg, err := Load(cf, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load(map[string]string{})
	ac := cfg.Agent("test")
	if ac.SystemPrompt != "FILE BASE" || ac.SystemPromptAppend != "FILE EXTRA\n" {
		t.Errorf("file: prompt %q, append %q", ac.SystemPrompt, ac.SystemPromptAppend)
	}
	if ac.Models[0].SystemPrompt != "" || ac.Models[1].SystemPrompt != "B BASE" || ac.Models[1].SystemPromptAppend != "B EXTRA" {
		t.Errorf("per model: %+v", ac.Models)
	}
	var shown []string
	for _, r := range cfg.Rows() {
		if strings.HasPrefix(r.Key, "system_prompt") {
			shown = append(shown, r.Key+"="+r.Value+" from "+r.From.Kind)
		}
	}
	if got := strings.Join(shown, "; "); got != "system_prompt=(set, 9 bytes) from file; system_prompt_append=(set, 11 bytes) from file" {
		t.Errorf("config show: %s", got)
	}

	ac = load(map[string]string{"CROW_SYSTEM_PROMPT": "ENV BASE", "CROW_SYSTEM_PROMPT_APPEND": "ENV EXTRA"}).Agent("test")
	if ac.SystemPrompt != "ENV BASE" || ac.SystemPromptAppend != "ENV EXTRA" {
		t.Errorf("env: prompt %q, append %q", ac.SystemPrompt, ac.SystemPromptAppend)
	}
}
