package config

import "fmt"

// The system prompt settings: system_prompt replaces the built-in prompt
// (agent/prompt picks a compact or full one by the model's window),
// system_prompt_append adds to it; each also per model in [[models]]. The
// environment (CROW_SYSTEM_PROMPT, CROW_SYSTEM_PROMPT_APPEND) wins over
// the file's top-level keys.

// resolvePrompt applies env > file > none.
func (c *Settings) resolvePrompt(r resolver, fc fileConfig) {
	c.systemPrompt = r.str("", "CROW_SYSTEM_PROMPT", fc.SystemPrompt, "system_prompt", "")
	c.systemPromptAppend = r.str("", "CROW_SYSTEM_PROMPT_APPEND", fc.SystemPromptAppend, "system_prompt_append", "")
}

// promptRows are the prompt settings `config show` lists: their size, not
// their text (a prompt is long, and one row is one line).
func (c *Settings) promptRows() []Row {
	show := func(v Value[string], unset string) Row {
		s := unset
		if v.V != "" {
			s = fmt.Sprintf("(set, %d bytes)", len(v.V))
		}
		return Row{"", s, v.From}
	}
	replace, add := show(c.systemPrompt, "(built-in, compact or full by the model's window)"), show(c.systemPromptAppend, "(none)")
	replace.Key, add.Key = "system_prompt", "system_prompt_append"
	return []Row{replace, add}
}
