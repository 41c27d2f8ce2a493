// Package prompt writes the system prompt: the workflow the model is taught
// (compact.md, full.md), the facts of its environment, the session's mode,
// the user's additions and the project's instruction files (AGENTS.md and
// its peers).
//
// The prompt is a cached prefix of every request: everything here is
// computed once per session (Probe, Instructions) and Build is a pure
// function of what it is given, so the same session gives the same text.
package prompt

import (
	"fmt"
	"strings"
)

// Session is everything one session's prompt is built from.
type Session struct {
	Tier Tier
	// Base replaces the tier's built-in text when set (configuration, or a
	// client's systemPrompt in override mode).
	Base string
	// Append is added after the base, in order (configuration, then the
	// client's systemPrompt in append mode).
	Append []string
	Model  string
	// Mode names the session mode and says what it permits.
	Mode string
	Env  Env
	// Instructions are the project's instruction files, root first.
	Instructions []Instruction
}

// Build writes the system prompt. Parts that change least come first, so
// a change (a mode switch, a nested instruction file) keeps the longest
// possible prefix.
func Build(s Session) string {
	var b strings.Builder
	base := strings.TrimSpace(s.Base)
	if base == "" {
		base = s.Tier.Text()
	}
	b.WriteString(base)
	for _, a := range s.Append {
		if a = strings.TrimSpace(a); a != "" {
			b.WriteString("\n\n")
			b.WriteString(a)
		}
	}
	b.WriteString("\n\n# Environment\n")
	s.Env.write(&b, s.Tier)
	if s.Model != "" {
		fmt.Fprintf(&b, "- Model: %s\n", s.Model)
	}
	if s.Mode != "" {
		fmt.Fprintf(&b, "- Mode: %s\n", s.Mode)
	}
	if len(s.Instructions) > 0 {
		b.WriteString("\n# Project instructions\n")
		for _, in := range s.Instructions {
			b.WriteString("\n")
			b.WriteString(in.Section())
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
