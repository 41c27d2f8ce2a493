package provider

import "strings"

// Reasoning inline in the answer: Qwen3, QwQ and the DeepSeek-R1 distills
// write their reasoning into content between <think> and </think> when the
// server runs no reasoning parser (vLLM without --reasoning-parser, plain
// llama.cpp templates, LM Studio's raw mode). thinkSplitter moves it out of
// the answer as it streams, wherever the chunk boundaries fall: a tag may
// arrive split at any byte.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

type thinkState uint8

const (
	thinkUndecided thinkState = iota // only whitespace seen: a <think> may still open
	thinkInside                      // between <think> and </think>
	thinkAfter                       // after </think>: the answer's leading whitespace is dropped
	thinkPlain                       // an ordinary answer
)

// thinkSplitter splits content deltas into reasoning and answer text. Only a
// <think> at the very start of the content (after whitespace) opens a
// reasoning block; a literal "<think>" later in an answer stays text.
//
// With opened set the chat template already wrote the <think> into the
// prompt (QwQ, the DeepSeek-R1 distills, Qwen3 Thinking-2507 and Qwen3.5),
// so the model starts inside the block and only writes its </think>: the
// content up to the first </think> is reasoning. opened is set only for
// models configured or known to do this, never guessed from the content: a
// guess ("a </think> before any <think>") could only be made after the fact
// and would hide the beginning of an ordinary answer that quotes the tag.
type thinkSplitter struct {
	state  thinkState
	opened bool   // the reply starts inside a <think> block the prompt opened
	held   string // bytes not yet given out: a possible partial tag or leading whitespace
}

// split returns the reasoning and text that content adds. Bytes that may be
// part of a tag are held back until the next call or flush.
func (t *thinkSplitter) split(content string) (reasoning, text string) {
	if t.state == thinkPlain {
		return "", content // the common case: no copy, no scan
	}
	s := t.held + content
	t.held = ""
	for {
		switch t.state {
		case thinkUndecided:
			rest := strings.TrimLeft(s, " \t\r\n")
			switch {
			case rest == "" || (len(rest) < len(thinkOpen) && strings.HasPrefix(thinkOpen, rest)):
				t.held = s
				return reasoning, text
			case strings.HasPrefix(rest, thinkOpen):
				t.state, s = thinkInside, rest[len(thinkOpen):]
			case t.opened:
				t.state, s = thinkInside, rest
			default:
				t.state = thinkPlain
				return reasoning, text + s
			}
		case thinkInside:
			if i := strings.Index(s, thinkClose); i >= 0 {
				reasoning += s[:i]
				t.state, s = thinkAfter, s[i+len(thinkClose):]
				continue
			}
			keep := partialSuffix(s, thinkClose)
			t.held = s[len(s)-keep:]
			return reasoning + s[:len(s)-keep], text
		case thinkAfter:
			rest := strings.TrimLeft(s, " \t\r\n")
			if rest == "" {
				return reasoning, text
			}
			t.state = thinkPlain
			return reasoning, text + rest
		default:
			return reasoning, text + s
		}
	}
}

// flush gives out what split held back when the stream ends: an unfinished
// reasoning block stays reasoning, anything else is text.
func (t *thinkSplitter) flush() (reasoning, text string) {
	s := t.held
	t.held = ""
	switch t.state {
	case thinkInside:
		return s, ""
	case thinkUndecided:
		rest := strings.TrimLeft(s, " \t\r\n")
		if rest == "" {
			return "", ""
		}
		if t.opened {
			t.state = thinkInside
			return rest, ""
		}
		t.state = thinkPlain
		return "", s
	default:
		return "", ""
	}
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}
