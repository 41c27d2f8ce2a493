package prompt

import (
	_ "embed"
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
