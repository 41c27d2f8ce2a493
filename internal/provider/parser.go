package provider

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Parser turns the chunks of one streamed chat completion into Events and
// accumulates them into a Result. Feed every chunk to Add in arrival order,
// then call Finish. A Parser is not safe for concurrent use; use one per
// stream.
//
// Only choice 0 is read (crow-acp never asks for n>1). Tool-call deltas are
// accumulated by their index, so id and name may arrive only in the first
// delta, arguments in many pieces, several calls interleaved, and the last
// piece in the same chunk as finish_reason.
type Parser struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []*callState // in order of first appearance
	finish    FinishReason
	usage     *Usage
	think     thinkSplitter // <think> blocks inline in content
	events    []Event
	chunks    int
	finished  bool
}

type callState struct {
	key       int // the tool-call index the provider sends
	index     int // the index reported in events; equals key unless the provider reused an index
	id        string
	name      string
	signature string // Gemini 3's thought signature
	args      strings.Builder
}

// startInThink tells p that the reply starts inside a <think> block the
// prompt opened (InlineThinkOpen): the content up to the first </think> is
// reasoning. Call it before the first Add.
func (p *Parser) startInThink() { p.think.opened = true }

// Add consumes one chunk and returns the events it produced, in order:
// reasoning, text, tool-call deltas, finish, usage. The returned slice is
// reused by the next call to Add; copy it to keep it.
func (p *Parser) Add(chunk Chunk) []Event {
	p.events = p.events[:0]
	p.chunks++
	for i := range chunk.Choices {
		c := &chunk.Choices[i]
		if c.Index != 0 {
			continue
		}
		p.addDelta(&c.Delta)
		if c.FinishReason != "" {
			p.flushThink()
			p.finish = FinishReason(c.FinishReason)
			p.events = append(p.events, Event{Kind: EventFinish, FinishReason: p.finish})
		}
	}
	if chunk.Usage != nil {
		u := usageOf(*chunk.Usage)
		p.usage = &u
		p.events = append(p.events, Event{Kind: EventUsage, Usage: u})
	}
	return p.events
}

func (p *Parser) addDelta(d *ChunkDelta) {
	// A server that sends more than one reasoning field carries the same
	// text in each (OpenRouter: reasoning and reasoning_details), so only
	// one is used.
	r := d.ReasoningContent
	if r == "" {
		r = d.Reasoning
	}
	if r != "" {
		// A server that parses reasoning out of the content (vLLM's
		// deepseek_r1 parser) sends it in a field before any content; the
		// content is then the answer, whatever the template opened.
		if p.think.state == thinkUndecided {
			p.think.opened = false
		}
		p.addReasoning(r)
	}
	switch {
	case d.Content == "":
	case p.think.state == thinkPlain: // the common case, without a call
		p.text.WriteString(d.Content)
		p.emit(EventText, d.Content)
	default:
		r, t := p.think.split(d.Content)
		p.addReasoning(r)
		p.addText(t)
	}
	// A refusal is shown to the user like text: it is the model's answer.
	if d.Refusal != "" {
		p.text.WriteString(d.Refusal)
		p.events = append(p.events, Event{Kind: EventText, Text: d.Refusal})
	}
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		c := p.callFor(tc)
		if tc.ID != "" && c.id == "" {
			c.id = tc.ID
		}
		if tc.ThoughtSignature != "" {
			c.signature = tc.ThoughtSignature
		}
		if n := tc.Name; n != "" && n != c.name {
			// Some servers repeat the full name in every delta; a name
			// split in pieces is appended.
			c.name += n
		}
		c.args.WriteString(tc.Arguments)
		p.events = append(p.events, Event{
			Kind:      EventToolCallDelta,
			ToolIndex: c.index,
			// strings.Builder.String does not copy, so reporting the call so
			// far costs nothing per delta.
			ToolCall: ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()},
		})
	}
}

func (p *Parser) addReasoning(r string) {
	if r != "" {
		p.reasoning.WriteString(r)
		p.emit(EventReasoning, r)
	}
}

func (p *Parser) addText(t string) {
	if t != "" {
		p.text.WriteString(t)
		p.emit(EventText, t)
	}
}

// emit adds a text or reasoning event. The events slice is reused from
// chunk to chunk, so the event is written in place instead of being built
// and copied by append: an Event is 136 bytes, and this is the per-chunk
// cost of a streamed reply.
func (p *Parser) emit(kind EventKind, text string) {
	n := len(p.events)
	if n == cap(p.events) {
		p.events = append(p.events, Event{})
	} else {
		p.events = p.events[:n+1]
	}
	p.events[n] = Event{Kind: kind, Text: text}
}

// flushThink gives out content held back as a possible partial <think> tag.
func (p *Parser) flushThink() {
	r, t := p.think.flush()
	p.addReasoning(r)
	p.addText(t)
}

// callFor finds the accumulator a tool-call delta belongs to: the latest call
// with the same provider index. Some servers send every call with index 0 (or
// none) and tell calls apart only by id, so a new non-empty id at a taken
// index starts a new call, numbered after the others.
func (p *Parser) callFor(tc *ChunkToolCall) *callState {
	key := 0
	if tc.Index != nil {
		key = *tc.Index
	} else if n := len(p.calls); n > 0 {
		// No index: continue the latest call unless the id says otherwise.
		key = p.calls[n-1].key
	}
	id := tc.ID
	// Search from the end: the current call is almost always the latest.
	for i := len(p.calls) - 1; i >= 0; i-- {
		c := p.calls[i]
		if c.key != key {
			continue
		}
		if id == "" || c.id == "" || c.id == id {
			return c
		}
		break // same index, different id: a new call
	}
	c := &callState{key: key, index: key}
	if p.indexTaken(key) {
		c.index = p.nextIndex()
	}
	p.calls = append(p.calls, c)
	return c
}

func (p *Parser) indexTaken(index int) bool {
	for _, c := range p.calls {
		if c.index == index {
			return true
		}
	}
	return false
}

func (p *Parser) nextIndex() int {
	next := 0
	for _, c := range p.calls {
		if c.index >= next {
			next = c.index + 1
		}
	}
	return next
}

// Chunks reports how many chunks were added.
func (p *Parser) Chunks() int { return p.chunks }

// Finish returns what the stream produced so far: text, reasoning, finish
// reason, usage, and the tool calls in index order with missing ids filled
// in and arguments checked. Empty arguments become "{}"; arguments that are
// not a JSON object keep their text and get ToolCall.ArgumentsError. It may
// be called after a failed stream to keep the partial result, and more than
// once (ids stay the same).
func (p *Parser) Finish() *Result {
	// Content held back as a possible partial <think> tag (at most a few
	// bytes) is given out with finish_reason; a stream cut before it loses
	// them, so the Result stays exactly what the events carried.
	r := &Result{
		Text:         p.text.String(),
		Reasoning:    p.reasoning.String(),
		FinishReason: p.finish,
	}
	if p.usage != nil {
		u := *p.usage
		r.Usage = &u
	}
	if !p.finished {
		p.finished = true
		sort.SliceStable(p.calls, func(i, j int) bool { return p.calls[i].index < p.calls[j].index })
		// Ids must be unique within a reply: the results are matched to the
		// calls by id, and endpoints reject a history with duplicates. Some
		// servers send the same id at two indexes; the later call gets a
		// fresh one.
		seen := make(map[string]bool, len(p.calls))
		for _, c := range p.calls {
			if c.id == "" || seen[c.id] {
				c.id = newCallID(c.index)
			}
			seen[c.id] = true
		}
	}
	if len(p.calls) > 0 {
		r.ToolCalls = make([]ToolCall, 0, len(p.calls))
		for _, c := range p.calls {
			tc := ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String(), ThoughtSignature: c.signature}
			tc.Arguments, tc.ArgumentsError = checkArguments(tc.Arguments)
			r.ToolCalls = append(r.ToolCalls, tc)
		}
	}
	return r
}

// checkArguments normalises streamed tool-call arguments: blank becomes "{}",
// anything that is not a single JSON object is reported.
func checkArguments(args string) (string, string) {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return "{}", ""
	}
	if !json.Valid([]byte(trimmed)) {
		return args, fmt.Sprintf("tool arguments are not valid JSON: %s", abbreviate(trimmed, 200))
	}
	if trimmed[0] != '{' {
		return args, fmt.Sprintf("tool arguments must be a JSON object, got: %s", abbreviate(trimmed, 200))
	}
	return trimmed, ""
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// newCallID makes an id for a tool call the server sent without one. The
// random part keeps ids unique across the turns of a session.
func newCallID(index int) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return fmt.Sprintf("call_%d_%s", index, hex.EncodeToString(b[:]))
}
