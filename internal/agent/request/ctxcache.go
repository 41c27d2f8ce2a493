package request

import (
	"context"
	"reflect"
	"slices"
	"sync"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

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
