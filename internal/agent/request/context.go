package request

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// The system prompt is written in sysprompt.go (agent/prompt).

// ContextEntry is one message of a model request with its token count and
// the stored message it comes from (0: the system prompt or a synthetic
// result).
type ContextEntry struct {
	Msg       provider.Message
	Tokens    int
	MessageID int64
}

func MessagesOf(entries []ContextEntry) []provider.Message {
	out := make([]provider.Message, len(entries))
	for i, e := range entries {
		out[i] = e.Msg
	}
	return out
}

// ContextMessages builds a request's messages from the stored view: the head (system
// prompt), then the torso in compaction.Order (summaries as context, then
// the active messages with every tool result right after its call). A call
// whose result never reached the store is answered with a synthetic error
// result, because model APIs reject a call without one. Roles alternate
// (see alternate).
func ContextMessages(c compaction.Counter, system string, view []persistence.Message) []ContextEntry {
	return alternate(rawContextMessages(c, system, view))
}

func rawContextMessages(c compaction.Counter, system string, view []persistence.Message) []ContextEntry {
	ordered := compaction.Order(view)
	out := make([]ContextEntry, 0, len(ordered)+1)
	out = append(out, ContextEntry{Msg: provider.Message{Role: provider.RoleSystem, Content: system}})
	// toolImages are the images the current run of tool results gave
	// (read_file): a tool message carries text only in the chat APIs, so
	// they follow the run as a user message.
	var toolImages []provider.ContentPart
	for i, m := range ordered {
		e := ContextEntry{Tokens: m.TokenCount, MessageID: m.ID}
		switch m.Role {
		case persistence.RoleUser:
			e.Msg = provider.Message{Role: provider.RoleUser, Content: m.Content, Parts: imageParts(&m)}
		case persistence.RoleSummary:
			e.Msg = provider.Message{Role: provider.RoleUser, Content: compaction.SummaryPrefix + m.Content}
		case persistence.RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				continue // an empty partial reply carries nothing
			}
			// The reasoning goes along; the request body keeps it only for
			// models that want it back (provider.ReasoningHistory).
			e.Msg = provider.Message{Role: provider.RoleAssistant, Content: m.Content, Reasoning: m.Reasoning}
			for _, tc := range m.ToolCalls {
				e.Msg.ToolCalls = append(e.Msg.ToolCalls, provider.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			}
		case persistence.RoleTool:
			e.Msg = provider.Message{Role: provider.RoleTool, ToolCallID: m.ToolCallID, Content: m.Content}
			toolImages = append(toolImages, imageParts(&m)...)
		default:
			continue
		}
		out = append(out, e)
		// Synthetic results go after the stored results of the same
		// assistant message (Order put those right behind it).
		if m.Role == persistence.RoleTool || m.Role == persistence.RoleAssistant {
			if i+1 < len(ordered) && ordered[i+1].Role == persistence.RoleTool {
				continue
			}
			if owner, answered := ownerOf(ordered, i); owner != nil {
				for _, tc := range owner.ToolCalls {
					if !answered[tc.ID] {
						out = append(out, ContextEntry{
							Msg:    provider.Message{Role: provider.RoleTool, ToolCallID: tc.ID, Content: compaction.InterruptedResult},
							Tokens: compaction.SyntheticTokens(c, tc.ID),
						})
					}
				}
			}
			if len(toolImages) > 0 {
				// Counted with the tool messages that hold them.
				out = append(out, ContextEntry{Msg: provider.Message{Role: provider.RoleUser, Content: ToolImagesText, Parts: toolImages}})
				toolImages = nil
			}
		}
	}
	return out
}

// alternate merges consecutive user messages, and consecutive assistant
// messages, into one: strict chat templates (llama.cpp's Jinja for
// Mistral, Gemma and others) refuse two in a row with HTTP 500
// "Conversation roles must alternate user/assistant/...", and a session
// produces them after a summary (sent as a user message) followed by a
// prompt, after a turn cancelled or failed before its first token, and
// after a reply that was reasoning only (not sent back). The merged text
// keeps each message verbatim, joined by a blank line, so the summary
// stays first and a prompt is still the last thing the model reads.
//
// A merged entry counts the tokens of all it holds. A merged user entry
// keeps the first message's id (the context cache looks for a prompt's own
// entry and, not finding it, keeps that part open); a merged assistant
// keeps the last one's, which made the tool calls that follow.
func alternate(entries []ContextEntry) []ContextEntry {
	merge := func(i int) bool {
		r := entries[i].Msg.Role
		return i > 0 && r == entries[i-1].Msg.Role && (r == provider.RoleUser || r == provider.RoleAssistant) &&
			len(entries[i-1].Msg.ToolCalls) == 0
	}
	n := 0
	for i := range entries {
		if merge(i) {
			n++
		}
	}
	if n == 0 {
		return entries
	}
	out := make([]ContextEntry, 0, len(entries)-n)
	for i, e := range entries {
		if !merge(i) {
			out = append(out, e)
			continue
		}
		last := &out[len(out)-1]
		m := last.Msg
		m.Content = joinText(m.Content, e.Msg.Content)
		m.Reasoning = joinText(m.Reasoning, e.Msg.Reasoning)
		m.Parts = append(m.Parts[:len(m.Parts):len(m.Parts)], e.Msg.Parts...)
		m.ToolCalls, m.ReasoningItems = e.Msg.ToolCalls, e.Msg.ReasoningItems
		last.Msg, last.Tokens = m, last.Tokens+e.Tokens
		if m.Role == provider.RoleAssistant {
			last.MessageID = e.MessageID
		}
	}
	return out
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// ownerOf returns the assistant message whose results end at ordered[i]
// (ordered[i] itself, or the assistant before a run of tool messages), and
// the calls those results answer.
func ownerOf(ordered []persistence.Message, i int) (*persistence.Message, map[string]bool) {
	answered := make(map[string]bool)
	for ; i >= 0; i-- {
		switch ordered[i].Role {
		case persistence.RoleAssistant:
			return &ordered[i], answered
		case persistence.RoleTool:
			answered[ordered[i].ToolCallID] = true
		default:
			return nil, nil
		}
	}
	return nil, nil
}

// ToolImagesText introduces the images tool results gave, in the user
// message that carries them.
const ToolImagesText = "[The image(s) the tool results above returned:]"

// imageParts are m's images as the model reads them: an image compaction
// took out of the context (compaction.ContextParts) is its note, as text.
func imageParts(m *persistence.Message) []provider.ContentPart {
	var out []provider.ContentPart
	ctx := compaction.ContextParts(m)
	for i, p := range m.Parts {
		if p.Type != "image" {
			continue
		}
		switch q := ctx[i]; {
		case q.Type == "text":
			out = append(out, provider.ContentPart{Type: "text", Text: q.Text})
		case strings.HasPrefix(q.MimeType, "image/"):
			out = append(out, provider.ContentPart{Type: "image", MimeType: q.MimeType, Data: q.Data})
		}
	}
	return out
}

// A long session without compaction sends its whole history with every
// request. Reading every active message from the store and counting it
// again for each request made a turn cost grow with the history (issue 19:
// +31 ms per 1,000 turns). So the session's active view is kept between
// requests and brought up to date by reading only the messages stored
// after the newest it holds (their seq).
//
// Appends are all a seq shows. Where the agent changes stored messages in
// place it tells the session's view right after the write (whether or not
// the write failed: it may have been applied): an updated message is read
// again from its seq on (changed); a compaction, an expand, collapse or
// delete of one, or a repair drops the view (reset). Another
// process writes a session only while it holds the session's lease, and
// every acquisition raises the lease's generation: when this process takes
// the lease and the generation is not the next after its own last one,
// someone else held it in between and the view is dropped. Without the
// lease (a context report outside a turn) the view is read afresh and the
// kept one is left alone.

// MessageReader is what reading a session's view needs of the store.
type MessageReader interface {
	Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error)
}

// ContextCache is one session's kept view (in session).
type ContextCache struct {
	mu    sync.Mutex
	Valid bool
	view  []persistence.Message // active messages in seq order, as last read
	Last  int64                 // the highest seq in view
	dirty int64                 // the lowest seq changed in place since (0: none)
	gen   int64                 // generation of the session's last lease this process knows (known: it does)
	known bool
	// epoch counts what may make a read taken earlier stale here: every
	// lease this process takes and every change it makes in place (seed).
	epoch uint64
	// pending are counts a seed made in memory, not yet stored: the next
	// sync hands them to activeView, which stores them.
	pending    map[int64]int
	pendingEnc string // the encoding of pending

	// Body keeps the encoded messages of the session's last model
	// request (the history is encoded once, not for every request).
	Body provider.BodyCache

	// entries are the request messages of the view's closed part
	// (RequestEntries).
	entries entriesMemo

	// fixed is the last count of the fixed prefix (system prompt and tool
	// schemas), kept while the counter, prompt and tools are the same.
	fixed fixedCount
}

type fixedCount struct {
	counter string
	system  string
	tools   []provider.Tool
	tokens  int
}

// Reset drops the kept view.
func (cc *ContextCache) Reset() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.drop()
	cc.entries = entriesMemo{}
	cc.epoch++
}

// Changed marks the message with id changed in place: the view is read
// again from it on. A message the view does not hold needs nothing: it is
// inactive, or newer than the view and read with the next update.
func (cc *ContextCache) Changed(id int64) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.epoch++
	for i := len(cc.view) - 1; i >= 0; i-- { // usually the newest message
		if cc.view[i].ID == id {
			if seq := cc.view[i].Seq; cc.dirty == 0 || seq < cc.dirty {
				cc.dirty = seq
			}
			return
		}
	}
}

// Leased notes that this process acquired the session's lease with
// generation gen; a gap since its last one means another holder.
func (cc *ContextCache) Leased(gen int64) {
	cc.mu.Lock()
	defer cc.mu.Unlock()

	if !cc.known || (gen != cc.gen && gen != cc.gen+1) {
		cc.drop()
	}
	cc.gen, cc.known = gen, true
	cc.epoch++
}

// Released notes the generation of the session's lease found released (0:
// it was never leased) by a load that had nothing to repair and so took
// no lease: whoever writes next takes the one after it, so a later lease
// here finds any gap after it, as after a lease of its own. The view
// stays only if that lease was this process's.
func (cc *ContextCache) Released(gen int64) {
	cc.mu.Lock()
	defer cc.mu.Unlock()

	if !cc.known || gen != cc.gen {
		cc.drop()
	}
	cc.gen, cc.known = gen, true
	cc.epoch++
}

// drop forgets the view (cc.mu held).
func (cc *ContextCache) drop() {
	cc.Valid, cc.view, cc.Last, cc.dirty, cc.pending = false, nil, 0, 0, nil
}

// A session/load reads every message of the session outside any turn, and
// the compaction check after it counts the active ones: the first turn
// after a load starts from that read (seed) instead of reading and
// counting the whole context again. The read is as good as a turn's if
// nothing changed the session between it and the seed that the cache
// would not see afterwards: appends are read by seq anyway; this process's
// own leases and changes in place raise the epoch, so the seed is refused;
// another process writes only under a lease of its own, taken after the
// last one this process knows (the load's repair lease, or the released
// one the load found when there was nothing to repair), so the next lease
// here finds the gap in generations and drops the seed like any kept view.

// SeedTicket is taken before a load reads the messages; seed accepts the
// read only if nothing it cannot follow happened since.
type SeedTicket struct {
	cc    *ContextCache
	epoch uint64
	Ok    bool
}

// Ticket opens a seed: only after a lease of this process or one found
// released (a gap in generations can then be seen) and outside its turns (held: this
// process's turn holds the session's lease and is writing).
func (cc *ContextCache) Ticket(held bool) SeedTicket {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return SeedTicket{cc: cc, epoch: cc.epoch, Ok: !held && cc.known}
}

// Seed makes view (the active messages a load read, in seq order, counted
// as they are) the kept view, with counts made in memory still to be
// stored, unless something happened since the ticket. The view is shared
// from then on: it is never written.
func (t SeedTicket) Seed(view []persistence.Message, enc string, counted map[int64]int) {
	if !t.Ok {
		return
	}
	cc := t.cc
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.epoch != t.epoch {
		return
	}
	cc.view, cc.Last, cc.dirty, cc.Valid = slices.Clip(view), 0, 0, true
	cc.pending, cc.pendingEnc = counted, enc
	if n := len(view); n > 0 {
		cc.Last = view[n-1].Seq
	}
	cc.entries = entriesMemo{}
}

// Sync brings the view up to date with the store, counted with c, and
// returns it with the counts it made. The view is shared with earlier
// callers, so what they were given is never written: a change copies it.
func (cc *ContextCache) Sync(ctx context.Context, store MessageReader, sessionID string, c compaction.Counter) ([]persistence.Message, map[int64]int, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.Valid {
		view, err := store.Messages(ctx, sessionID, persistence.MessageFilter{ActiveOnly: true})
		if err != nil {
			return nil, nil, err
		}
		counted, err := CountView(ctx, c, view)
		if err != nil {
			return nil, nil, err
		}
		cc.view, cc.Last, cc.dirty, cc.Valid = view, 0, 0, true
		if n := len(view); n > 0 {
			cc.Last = view[n-1].Seq
		}
		return slices.Clip(cc.view), counted, nil
	}
	view, after := cc.view, cc.Last
	if cc.dirty > 0 && cc.dirty <= after {
		keep, _ := slices.BinarySearchFunc(view, cc.dirty, func(m persistence.Message, seq int64) int {
			return int(m.Seq - seq)
		})
		view, after = slices.Clone(view[:keep]), cc.dirty-1
	}
	newer, err := store.Messages(ctx, sessionID, persistence.MessageFilter{ActiveOnly: true, AfterSeq: after})
	if err != nil {
		return nil, nil, err
	}
	if stale(view, c) {
		view = slices.Clone(view)
	}
	view = append(view, newer...)
	counted, err := CountView(ctx, c, view)
	if err != nil {
		return nil, nil, err
	}
	cc.view, cc.dirty = view, 0
	if n := len(newer); n > 0 && newer[n-1].Seq > cc.Last {
		cc.Last = newer[n-1].Seq
	}
	if len(cc.pending) > 0 && cc.pendingEnc == c.Name() {
		// A seed's counts made with c: stored with this sync's.
		if counted == nil {
			counted = make(map[int64]int, len(cc.pending))
		}
		for id, n := range cc.pending {
			counted[id] = n
		}
	}
	cc.pending = nil
	return slices.Clip(cc.view), counted, nil
}

// stale reports whether a message of view is not counted with c.
func stale(view []persistence.Message, c compaction.Counter) bool {
	enc := c.Name()
	for i := range view {
		if view[i].TokenEncoding != enc || view[i].TokenCount <= 0 {
			return true
		}
	}
	return false
}

// CountView counts with c the messages of view that are not, and returns
// the counts it made by message id.
func CountView(ctx context.Context, c compaction.Counter, view []persistence.Message) (map[int64]int, error) {
	enc := c.Name()
	var counted map[int64]int
	for i := range view {
		m := &view[i]
		if m.TokenEncoding == enc && m.TokenCount > 0 {
			continue
		}
		n, err := compaction.MessageTokensContext(ctx, c, m)
		if err != nil {
			return nil, err
		}
		m.TokenCount, m.TokenEncoding = n, enc
		if counted == nil {
			counted = make(map[int64]int)
		}
		counted[m.ID] = n
	}
	return counted, nil
}

// FixedTokens counts the head every request carries: system prompt and
// tool schemas, once per counter, prompt and tool set.
func (cc *ContextCache) FixedTokens(c compaction.Counter, system string, tools []provider.Tool) int {
	cc.mu.Lock()
	f := cc.fixed
	cc.mu.Unlock()
	if f.counter == c.Name() && f.system == system && reflect.DeepEqual(f.tools, tools) {
		return f.tokens
	}
	n := compaction.FixedTokens(c, system, tools)
	cc.mu.Lock()
	cc.fixed = fixedCount{counter: c.Name(), system: system, tools: tools, tokens: n}
	cc.mu.Unlock()
	return n
}

// entriesMemo keeps the request messages built from the closed part of the
// last request's view: everything before its last user message, which the
// next turn only adds after. So a request builds the messages of what
// follows only, not of the whole history again.
//
// A tool result belongs to the nearest earlier assistant message that made
// its call (compaction.Order), and a summary goes first: a later message
// could change the closed part only as a result for a call made in it, or
// as a summary. Both are checked; either builds everything again.
type entriesMemo struct {
	prefix  []persistence.Message // the closed part, a prefix of the view (shared, never changed)
	counter string                // the counter of the synthetic results in entries
	entries []ContextEntry        // contextMessages of prefix, without the system prompt; never handed out
	calls   map[string]bool       // the call ids made in prefix
}

// RequestEntries is contextMessages(c, system, view). view must be the kept
// view of the session (its messages are never changed once handed out).
func (cc *ContextCache) RequestEntries(c compaction.Counter, system string, view []persistence.Message) []ContextEntry {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	memo := &cc.entries
	cut := len(memo.prefix)
	if cut > 0 && (memo.counter != c.Name() || len(view) < cut || &view[0] != &memo.prefix[0] || !closedAfter(view[cut:], memo.calls)) {
		*memo, cut = entriesMemo{}, 0
	}
	rest := ContextMessages(c, system, view[cut:])
	out := make([]ContextEntry, 0, len(memo.entries)+len(rest))
	out = append(out, rest[0]) // the system prompt
	out = append(out, memo.entries...)
	out = append(out, rest[1:]...)
	out = alternate(out)
	memo.advance(c, view, out)
	return out
}

// closedAfter reports whether msgs, following a closed part that made the
// calls in calls, leave that part as it is.
func closedAfter(msgs []persistence.Message, calls map[string]bool) bool {
	var made map[string]bool
	for i := range msgs {
		switch m := &msgs[i]; m.Role {
		case persistence.RoleSummary:
			return false
		case persistence.RoleAssistant:
			for _, tc := range m.ToolCalls {
				if made == nil {
					made = make(map[string]bool)
				}
				made[tc.ID] = true
			}
		case persistence.RoleTool:
			if !made[m.ToolCallID] && calls[m.ToolCallID] {
				return false
			}
		}
	}
	return true
}

// advance moves the closed part up to the last user message of view, whose
// request messages are out, when what follows it leaves it closed.
func (memo *entriesMemo) advance(c compaction.Counter, view []persistence.Message, out []ContextEntry) {
	last := -1
	for i := len(view) - 1; i >= len(memo.prefix); i-- {
		if view[i].Role == persistence.RoleUser {
			last = i
			break
		}
	}
	if last <= len(memo.prefix) {
		return
	}
	calls := make(map[string]bool, len(memo.calls))
	for id := range memo.calls {
		calls[id] = true
	}
	for i := len(memo.prefix); i < last; i++ {
		for _, tc := range view[i].ToolCalls {
			calls[tc.ID] = true
		}
	}
	if !closedAfter(view[last:], calls) {
		return
	}
	// The user message's entry ends the closed part's messages.
	end := -1
	for i := len(out) - 1; i > len(memo.entries); i-- {
		if out[i].MessageID == view[last].ID {
			end = i
			break
		}
	}
	if end < 0 {
		return
	}
	memo.entries = append(memo.entries, out[1+len(memo.entries):end]...)
	memo.prefix, memo.counter, memo.calls = view[:last:last], c.Name(), calls
}
