package provider

import (
	"strings"
	"sync"
)

// Gemini 3 attaches a thought signature to the function calls it makes
// (extra_content.google.thought_signature on the tool call, in its
// OpenAI-compatible endpoint) and refuses the next request of the turn
// unless each step's calls come back with it: 400 "Function call is
// missing a thought_signature in functionCall parts..."
// (ai.google.dev/gemini-api/docs/thought-signatures: "When using Gemini 3
// models, you must pass back thought signatures during function calling,
// otherwise you will get a validation error"; the body as quoted on
// discuss.ai.google.dev, "OpenAI API compatibility broken due to
// thought_signature on gemini-3-pro-preview").
//
// The store keeps a call's id, name and arguments only, and the history is
// rebuilt from it for every request, so the client remembers the
// signatures it saw by call id, for as long as it runs: only the calls of
// the running turn are checked, and a turn does not outlive the process.
// They are sent back only to Gemini models (thoughtSignaturesFor), like
// reasoning passback is per model: other endpoints may refuse the field.

// maxThoughtSignatures bounds the memory: the oldest are forgotten first,
// long after their turn ended.
const maxThoughtSignatures = 4096

// thoughtSignatures remembers signatures by tool-call id.
type thoughtSignatures struct {
	mu    sync.Mutex
	byID  map[string]string
	order []string // ids, oldest first
}

func (t *thoughtSignatures) remember(calls []ToolCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range calls {
		if c.ThoughtSignature == "" || c.ID == "" {
			continue
		}
		if t.byID == nil {
			t.byID = make(map[string]string)
		}
		if _, ok := t.byID[c.ID]; !ok {
			t.order = append(t.order, c.ID)
		}
		t.byID[c.ID] = c.ThoughtSignature
	}
	for len(t.order) > maxThoughtSignatures {
		delete(t.byID, t.order[0])
		t.order = t.order[1:]
	}
}

// forRequest is the signatures of req's tool calls, or nil when req's
// model does not take them back.
func (t *thoughtSignatures) forRequest(req Request) map[string]string {
	if !thoughtSignaturesFor(req.Model) {
		return nil
	}
	out := map[string]string{}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if sig, ok := t.byID[c.ID]; ok {
				out[c.ID] = sig
			}
		}
	}
	return out
}

// thoughtSignaturesFor: Gemini models, by name (also behind a router's
// "google/" prefix), get their signatures back; 2.5 models accept them
// too.
func thoughtSignaturesFor(model string) bool {
	return strings.Contains(baseModel(model), "gemini")
}
