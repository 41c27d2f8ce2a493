package provider

import (
	"crypto/sha256"
	"math/big"
	"regexp"
	"strings"
	"sync"
)

// ReasoningHistory says what becomes of an assistant message's reasoning
// when the conversation is sent back to the model.
type ReasoningHistory string

const (
	// ReasoningAuto decides by the model's name (reasoningHistoryFor).
	ReasoningAuto ReasoningHistory = ""
	// ReasoningStrip never sends it: most endpoints ignore it, and the
	// first deepseek-reasoner answered 400 when it was there.
	ReasoningStrip ReasoningHistory = "strip"
	// ReasoningEcho sends it back (as reasoning_content) when there is some.
	ReasoningEcho ReasoningHistory = "echo"
	// ReasoningRequire sends reasoning_content on every assistant message,
	// empty when there is none (a compacted turn, another model's reply):
	// DeepSeek's thinking mode answers 400 when the field is missing.
	ReasoningRequire ReasoningHistory = "require"
)

// ToolCallIDStyle says how tool-call ids are written when the conversation
// is sent back to the model.
type ToolCallIDStyle string

const (
	// ToolCallIDsAuto decides by the model's name (toolCallIDsFor).
	ToolCallIDsAuto ToolCallIDStyle = ""
	// ToolCallIDsAsIs sends the ids as they were stored.
	ToolCallIDsAsIs ToolCallIDStyle = "as-is"
	// ToolCallIDsMistral sends ids of exactly 9 characters of [a-zA-Z0-9],
	// the only ones Mistral's API (and mistral_common behind other
	// servers) accepts; other ids are mapped by MistralToolCallID.
	ToolCallIDsMistral ToolCallIDStyle = "mistral"
)

// InlineThink says where a reply's inline <think> block may start, for
// servers that leave the model's reasoning in content (no reasoning parser).
type InlineThink string

const (
	// InlineThinkAuto decides by the model's name (inlineThinkFor).
	InlineThinkAuto InlineThink = ""
	// InlineThinkTag: only a <think> at the start of the content opens a
	// block (Qwen3, servers that keep the tag).
	InlineThinkTag InlineThink = "tag"
	// InlineThinkOpen: the chat template wrote <think> into the prompt, so
	// the reply starts inside the block and the content up to the first
	// </think> is reasoning (QwQ, DeepSeek-R1 distills, Qwen3 Thinking-2507).
	InlineThinkOpen InlineThink = "open"
)

// inlineThinkFor resolves InlineThinkAuto by the model's name: the models
// whose published chat template ends the prompt with "<think>\n" (QwQ's and
// the R1 distills' templates, deepseek-ai/DeepSeek-R1#352, vllm#13125; Qwen3
// Thinking-2507's model card: "it is normal for the model's output to
// contain only </think>"). Qwen3.5's template opens it too, but only while
// thinking is on, so it is not in the list: a Qwen3.5 reply that begins
// with an answer would become reasoning.
func inlineThinkFor(model string, v InlineThink) InlineThink {
	if v != InlineThinkAuto {
		return v
	}
	m := baseModel(model)
	switch {
	case strings.Contains(m, "qwq"), strings.Contains(m, "r1-distill"),
		strings.HasPrefix(m, "qwen3") && strings.Contains(m, "thinking-2507"):
		return InlineThinkOpen
	}
	return InlineThinkTag
}

// ParseInlineThink reads a configured value; "" and "auto" are
// InlineThinkAuto.
func ParseInlineThink(s string) (InlineThink, bool) {
	switch v := InlineThink(strings.ToLower(strings.TrimSpace(s))); v {
	case InlineThinkAuto, InlineThinkTag, InlineThinkOpen:
		return v, true
	case "auto":
		return InlineThinkAuto, true
	}
	return "", false
}

// ParseReasoningHistory reads a configured value; "" is ReasoningAuto.
func ParseReasoningHistory(s string) (ReasoningHistory, bool) {
	switch h := ReasoningHistory(strings.ToLower(strings.TrimSpace(s))); h {
	case ReasoningAuto, ReasoningStrip, ReasoningEcho, ReasoningRequire:
		return h, true
	}
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return ReasoningAuto, true
	}
	return "", false
}

// ParseToolCallIDStyle reads a configured value; "" is ToolCallIDsAuto.
func ParseToolCallIDStyle(s string) (ToolCallIDStyle, bool) {
	switch st := ToolCallIDStyle(strings.ToLower(strings.TrimSpace(s))); st {
	case ToolCallIDsAuto, ToolCallIDsAsIs, ToolCallIDsMistral:
		return st, true
	}
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return ToolCallIDsAuto, true
	}
	return "", false
}

// baseModel is the model's own name, lower case, without a router's
// "vendor/" prefix (OpenRouter's "deepseek/deepseek-v4-pro").
func baseModel(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

// reasoningHistoryFor resolves ReasoningAuto by the model's name. DeepSeek's
// thinking mode (deepseek-reasoner, V3.2 and V4) requires the field
// (api-docs.deepseek.com/guides/thinking_mode#tool-calls), the R1
// generation refused it, and so do servers that reject fields they do not
// know; everything else gets nothing, as before.
func reasoningHistoryFor(model string, h ReasoningHistory) ReasoningHistory {
	if h != ReasoningAuto {
		return h
	}
	m := baseModel(model)
	switch {
	case strings.Contains(m, "deepseek") && strings.Contains(m, "r1"):
		return ReasoningStrip
	case strings.Contains(m, "deepseek"), strings.HasPrefix(m, "mimo"):
		// Xiaomi MiMo's thinking mode has the same rule
		// (VicBilibily/GCMP#171 quotes their notice).
		return ReasoningRequire
	}
	return ReasoningStrip
}

// mistralNames are the model families Mistral serves, by name; their
// tokenizer rejects other tool-call ids wherever they run.
var mistralNames = []string{"mistral", "mixtral", "codestral", "devstral", "magistral", "ministral", "pixtral", "voxtral"}

// toolCallIDsFor resolves ToolCallIDsAuto by the model's name.
func toolCallIDsFor(model string, s ToolCallIDStyle) ToolCallIDStyle {
	if s != ToolCallIDsAuto {
		return s
	}
	m := baseModel(model)
	for _, n := range mistralNames {
		if strings.Contains(m, n) {
			return ToolCallIDsMistral
		}
	}
	return ToolCallIDsAsIs
}

// Compiled on first use: package initialisers run before initialize is
// answered (TestStartupInitCost).
var mistralIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9]{9}$`) })

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// MistralToolCallID is id written as Mistral accepts it: an id that already
// is 9 characters of [a-zA-Z0-9] stays; any other becomes 9 base-62 digits
// of its SHA-256. The mapping is a pure function of the id, so a call and
// its result map to the same id in every request, and a session can switch
// between Mistral and other models at any point: the stored ids never
// change.
func MistralToolCallID(id string) string {
	if mistralIDPattern().MatchString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	n := new(big.Int).SetBytes(sum[:])
	var b [9]byte
	mod := big.NewInt(62)
	r := new(big.Int)
	for i := range b {
		n.DivMod(n, mod, r)
		b[i] = base62[r.Int64()]
	}
	return string(b[:])
}

// usesMaxCompletionTokens: OpenAI's reasoning models refuse max_tokens and
// take max_completion_tokens (platform.openai.com/docs/guides/reasoning).
func usesMaxCompletionTokens(model string) bool {
	m := baseModel(model)
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if m == p || strings.HasPrefix(m, p+"-") || strings.HasPrefix(m, p+".") {
			return true
		}
	}
	return false
}
