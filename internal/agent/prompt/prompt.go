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
	_ "embed"
	"fmt"
	"strings"
)

//go:embed compact.md
var compactText string

//go:embed full.md
var fullText string

//go:embed minimal.md
var minimalText string

// Tier is the size class of the prompt, chosen by the model's window.
type Tier int

const (
	// Compact is for windows below FullFrom: the whole fixed prefix
	// (prompt and tool schemas) stays near 1.5k tokens, so a 6k-8k local
	// model keeps most of its window for the conversation.
	Compact Tier = iota
	// Full teaches the workflow in detail and adds the git status.
	Full
	// Minimal is the compact tier cut to one paragraph for windows below
	// CompactFrom, where the compact text alone would take a tenth of the
	// window.
	Minimal
)

// CompactFrom is the smallest window (tokens) given the whole compact text.
const CompactFrom = 4 << 10

// FullFrom is the smallest window (tokens) given the full tier. The full
// prompt is about 1.2k tokens with its facts (the compact one 0.4k), under
// 4% of 32k, so windows from 32k up can afford it; below, every token of
// the prefix is felt.
const FullFrom = 32 << 10

// TierFor is the tier of a model with this context window (tokens).
func TierFor(window int) Tier {
	switch {
	case window > 0 && window < CompactFrom:
		return Minimal
	case window > 0 && window < FullFrom:
		return Compact
	}
	return Full
}

func (t Tier) String() string {
	switch t {
	case Compact:
		return "compact"
	case Minimal:
		return "minimal"
	}
	return "full"
}

// Text is the tier's built-in workflow prompt.
func (t Tier) Text() string {
	switch t {
	case Compact:
		return strings.TrimSpace(compactText)
	case Minimal:
		return strings.TrimSpace(minimalText)
	}
	return strings.TrimSpace(fullText)
}

// InstructionBytes caps the project instruction files of one session
// together (the ones read at the start and those loaded later).
func (t Tier) InstructionBytes() int {
	switch t {
	case Compact:
		return 2 << 10
	case Minimal:
		return 1 << 10
	}
	return 16 << 10
}

// StatusLines caps the git status lines the full tier shows.
const StatusLines = 20

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
