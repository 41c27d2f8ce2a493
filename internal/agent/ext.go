package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

var _ acp.ExtMethodHandler = (*Agent)(nil)

// extHandler serves one extension method (names start with "_").
type extHandler func(ctx context.Context, a *Agent, params json.RawMessage) (any, error)

// extMethods maps extension methods to their handlers. Adding one is a line
// here.
var extMethods = map[string]extHandler{
	"_crow/compaction/list":     extCompactionList,
	"_crow/compaction/get":      extCompactionGet,
	"_crow/compaction/expand":   extCompactionExpand,
	"_crow/compaction/collapse": extCompactionCollapse,
	"_crow/compaction/delete":   extCompactionDelete,
	"_crow/context/build":       extContextBuild,
	"_crow/debug/stats":         extDebugStats,
	"_crow/prompts":             extPrompts,
	"_crow/undo":                extUndo,
	"_crow/redo":                extRedo,
}

// extMeta is initialize's agentCapabilities._meta: the extension methods
// this agent serves ({"crow": {"extMethods": [...]}}), so that a client
// can offer, say, an undo button only when _crow/undo is there.
func (a *Agent) extMeta() acp.Meta {
	names := make([]string, 0, len(extMethods))
	for n := range extMethods {
		if a.undo.undoing() || (n != "_crow/undo" && n != "_crow/redo" && n != "_crow/prompts") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	raw, _ := json.Marshal(map[string]any{"crow": map[string]any{"extMethods": names}})
	return raw
}

// HandleExtMethod dispatches an extension request.
func (a *Agent) HandleExtMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	h, ok := extMethods[method]
	if !ok {
		return nil, acp.MethodNotFound(method)
	}
	return h(ctx, a, params)
}

// decodeExt decodes params into P, strictly: a misspelt field is an error,
// not a silent default.
func decodeExt[P any](raw json.RawMessage) (*P, error) {
	p := new(P)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, acp.ParamsError(err)
	}
	return p, nil
}

type sessionParams struct {
	SessionID string `json:"sessionId"`
}

type compactionParams struct {
	SessionID    string `json:"sessionId"`
	CompactionID int64  `json:"compactionId"`
}

// compactionInfo is a compaction record on the wire.
type compactionInfo struct {
	ID               int64           `json:"compactionId"`
	Policy           string          `json:"policy"`
	CreatedAt        string          `json:"createdAt"`
	Expanded         bool            `json:"expanded"`
	CompactedIDs     []int64         `json:"compactedMessageIds"`
	KeptIDs          []int64         `json:"keptMessageIds"`
	AddedIDs         []int64         `json:"addedMessageIds"`
	SummaryMessageID *int64          `json:"summaryMessageId"`
	TokensBefore     int             `json:"tokensBefore"`
	TokensAfter      int             `json:"tokensAfter"`
	MessagesBefore   int             `json:"messagesBefore"`
	MessagesAfter    int             `json:"messagesAfter"`
	Settings         json.RawMessage `json:"settings,omitempty"`
}

func infoOf(c persistence.Compaction) compactionInfo {
	nonNil := func(ids []int64) []int64 {
		if ids == nil {
			return []int64{}
		}
		return ids
	}
	return compactionInfo{ID: c.ID, Policy: c.Policy, CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339Nano),
		Expanded: c.Expanded, CompactedIDs: nonNil(c.CompactedIDs), KeptIDs: nonNil(c.KeptIDs),
		AddedIDs: nonNil(c.AddedIDs), SummaryMessageID: c.SummaryMessageID,
		TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
		MessagesBefore: c.MessagesBefore, MessagesAfter: c.MessagesAfter, Settings: c.Settings}
}

// _crow/compaction/list {sessionId} → {compactions: [...]}, oldest first.
func extCompactionList(ctx context.Context, a *Agent, raw json.RawMessage) (any, error) {
	p, err := decodeExt[sessionParams](raw)
	if err != nil {
		return nil, err
	}
	if _, err := a.extSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	list, err := a.store.Compactions(ctx, p.SessionID)
	if err != nil {
		return nil, storeError("list compactions", err)
	}
	out := make([]compactionInfo, 0, len(list))
	for _, c := range list {
		out = append(out, infoOf(c))
	}
	return map[string]any{"compactions": out}, nil
}

// storedMessage is a stored message on the wire.
type storedMessage struct {
	ID         int64                  `json:"messageId"`
	Seq        int64                  `json:"seq"`
	Role       persistence.Role       `json:"role"`
	Content    string                 `json:"content"`
	ToolCalls  []persistence.ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string                 `json:"toolCallId,omitempty"`
	Active     bool                   `json:"active"`
	Tokens     int                    `json:"tokens,omitempty"`
}

// _crow/compaction/get {sessionId, compactionId} → {compaction, summary,
// compacted: the original messages, added: what the compaction inserted}.
func extCompactionGet(ctx context.Context, a *Agent, raw json.RawMessage) (any, error) {
	p, c, err := a.extCompaction(ctx, raw)
	if err != nil {
		return nil, err
	}
	all, err := a.store.Messages(ctx, p.SessionID, persistence.MessageFilter{})
	if err != nil {
		return nil, storeError("get compaction", err)
	}
	want := func(ids []int64) map[int64]bool {
		m := make(map[int64]bool, len(ids))
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	compacted, added := want(c.CompactedIDs), want(c.AddedIDs)
	orig, ins := []storedMessage{}, []storedMessage{}
	summary := ""
	for _, m := range all {
		sm := storedMessage{ID: m.ID, Seq: m.Seq, Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls,
			ToolCallID: m.ToolCallID, Active: m.IsActive, Tokens: m.TokenCount}
		if compacted[m.ID] {
			orig = append(orig, sm)
		}
		if added[m.ID] {
			ins = append(ins, sm)
			if c.SummaryMessageID != nil && *c.SummaryMessageID == m.ID {
				summary = m.Content
			}
		}
	}
	return map[string]any{"compaction": infoOf(*c), "summary": summary, "compacted": orig, "added": ins}, nil
}

// extCompaction decodes compaction params and loads the record.
func (a *Agent) extCompaction(ctx context.Context, raw json.RawMessage) (*compactionParams, *persistence.Compaction, error) {
	p, err := decodeExt[compactionParams](raw)
	if err != nil {
		return nil, nil, err
	}
	if _, err := a.extSession(ctx, p.SessionID); err != nil {
		return nil, nil, err
	}
	if p.CompactionID <= 0 {
		return nil, nil, acp.MissingParam("compactionId", "pass an id that _crow/compaction/list returned")
	}
	c, err := a.store.Compaction(ctx, p.SessionID, p.CompactionID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil, acp.ResourceNotFound("Session %s has no compaction %d; _crow/compaction/list shows the ones it has.", p.SessionID, p.CompactionID)
	}
	if err != nil {
		return nil, nil, storeError("get compaction", err)
	}
	return p, c, nil
}

// changeCompaction runs one undo operation when no turn is running, in
// this process or another: it takes the session's lease like a turn, so
// its write is fenced and never lands in the middle of another process's
// turn.
func changeCompaction(op string, fn func(s Store, ctx context.Context, sessionID string, id int64) error) extHandler {
	return func(ctx context.Context, a *Agent, raw json.RawMessage) (any, error) {
		p, c, err := a.extCompaction(ctx, raw)
		if err != nil {
			return nil, err
		}
		switch {
		case op == "expand" && c.Expanded:
			return nil, acp.InvalidRequest("Cannot expand compaction %d: it is already expanded.", c.ID)
		case op == "collapse" && !c.Expanded:
			return nil, acp.InvalidRequest("Cannot collapse compaction %d: it is not expanded.", c.ID)
		}
		sess := a.sessions.get(p.SessionID)
		if sess.runningTurn() != nil {
			return nil, acp.InvalidRequest("A prompt is running in session %s: %s the compaction when it ends.", p.SessionID, op)
		}
		err = a.leases.hold(ctx, sess, nil)
		if errors.Is(err, errHeldHere) {
			return nil, acp.InvalidRequest("A prompt is running in session %s: %s the compaction when it ends.", p.SessionID, op)
		}
		var leased *leasedError
		if errors.As(err, &leased) {
			return nil, acp.InvalidRequest("Cannot %s compaction %d now. %s", op, p.CompactionID, leased.err.Message)
		}
		if err != nil {
			return nil, storeError(op+" compaction", err)
		}
		defer a.leases.release(ctx, sess)
		if err := sess.req.Rewrite(func() error { return fn(a.writes(sess), ctx, p.SessionID, p.CompactionID) }); err != nil {
			if errors.Is(err, persistence.ErrConflict) {
				return nil, acp.InvalidRequest("Cannot %s compaction %d: a later compaction covers its messages; expand or delete that one first.", op, p.CompactionID)
			}
			return nil, storeError(op+" compaction", err)
		}
		// The view changed: what the provider counted no longer applies.
		sess.req.Forget()
		return a.contextSize(ctx, p.SessionID)
	}
}

var (
	extCompactionExpand   = changeCompaction("expand", Store.ExpandCompaction)
	extCompactionCollapse = changeCompaction("collapse", Store.CollapseCompaction)
	extCompactionDelete   = changeCompaction("delete", Store.DeleteCompaction)
)

// contextSize answers an undo operation with the new size of the context.
func (a *Agent) contextSize(ctx context.Context, sessionID string) (any, error) {
	b, err := a.contextReport(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"tokens": b.Tokens, "window": b.Window}, nil
}

// contextMessage is one message of the next request on the wire.
type contextMessage struct {
	Role       provider.Role       `json:"role"`
	Content    string              `json:"content"`
	ToolCalls  []provider.ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string              `json:"toolCallId,omitempty"`
	Tokens     int                 `json:"tokens"`
	MessageID  int64               `json:"messageId,omitempty"`
}

type contextReport struct {
	Messages      []contextMessage `json:"messages"`
	Tools         []string         `json:"tools"`
	FixedTokens   int              `json:"fixedTokens"`
	Tokens        int              `json:"tokens"`
	Window        int              `json:"window"`
	Budget        int              `json:"budget"`
	CompactAt     int              `json:"compactAt"`
	CompactionDue bool             `json:"compactionDue"`
	Tokenizer     string           `json:"tokenizer"`
	Model         string           `json:"model"`
}

// _crow/context/build {sessionId} → exactly the messages the next model
// request would contain, with token counts. When compactionDue is true the
// request would be compacted first.
func extContextBuild(ctx context.Context, a *Agent, raw json.RawMessage) (any, error) {
	p, err := decodeExt[sessionParams](raw)
	if err != nil {
		return nil, err
	}
	return a.contextReport(ctx, p.SessionID)
}

func (a *Agent) contextReport(ctx context.Context, sessionID string) (*contextReport, error) {
	s, err := a.extSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	sess := a.sessions.get(s.ID)
	m := a.build.MeterFor(s)
	view, err := a.build.ActiveView(ctx, &sess.req, m.Counter)
	if err != nil {
		return nil, storeError("build context", err)
	}
	fixed := a.build.FixedTokens(&sess.req, s, m.Counter)
	entries := request.ContextMessages(m.Counter, a.build.SystemPrompt(&sess.req, s), view)
	used, _ := sess.req.Measure(entries, fixed)
	st := m.Settings
	r := &contextReport{Messages: make([]contextMessage, 0, len(entries)), Tools: []string{}, FixedTokens: fixed,
		Tokens: used, Window: st.Window, Budget: st.Budget(), CompactAt: st.Trigger(),
		CompactionDue: st.Window > 0 && used > st.Trigger(), Tokenizer: m.Counter.Name(), Model: m.Model.Name}
	for i, e := range entries {
		tokens := e.Tokens
		if i == 0 {
			tokens = fixed // the system prompt carries the fixed part (tool schemas included)
		}
		r.Messages = append(r.Messages, contextMessage{Role: e.Msg.Role, Content: e.Msg.Content, ToolCalls: e.Msg.ToolCalls,
			ToolCallID: e.Msg.ToolCallID, Tokens: tokens, MessageID: e.MessageID})
	}
	for _, t := range a.turns.toolDefinitions(sess, s) {
		r.Tools = append(r.Tools, t.Name)
	}
	return r, nil
}

// undoParams are _crow/undo's and _crow/redo's.
type undoParams struct {
	SessionID string `json:"sessionId"`
	To        int    `json:"to,omitempty"` // prompt number; 0: the last prompt
	DryRun    bool   `json:"dryRun,omitempty"`
	Force     bool   `json:"force,omitempty"`
}

// promptInfo is a prompt on the wire.
type promptInfo struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// _crow/prompts {sessionId} → {prompts: [{number, text}]}: the prompts the
// conversation shows, the numbers _crow/undo's "to" takes.
func extPrompts(ctx context.Context, a *Agent, raw json.RawMessage) (any, error) {
	p, err := decodeExt[sessionParams](raw)
	if err != nil {
		return nil, err
	}
	if _, err := a.extSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	src, ok := a.cfg.Checkpoints.(checkpoint.PromptSource)
	if !ok {
		return nil, acp.InvalidRequest("Undo is not available: this store keeps no checkpoints.")
	}
	ps, err := checkpoint.Prompts(ctx, src, p.SessionID)
	if err != nil {
		return nil, storeError("list prompts", err)
	}
	out := []promptInfo{}
	for _, pr := range ps {
		if !pr.Undone {
			out = append(out, promptInfo{Number: pr.Number, Text: pr.Text})
		}
	}
	return map[string]any{"prompts": out}, nil
}

// _crow/undo {sessionId, to?, dryRun?, force?} → {report, prompt, pending}:
// what /undo (to: /rewind N) does, for a client's button.
func extUndo(ctx context.Context, a *Agent, raw json.RawMessage) (any, error) {
	p, err := decodeExt[undoParams](raw)
	if err != nil {
		return nil, err
	}
	if p.To < 0 {
		return nil, acp.InvalidParams("to must be a prompt number (1 or more) from _crow/prompts, or absent for the last prompt")
	}
	return a.undo.withUndoLease(ctx, p.SessionID, "undo", func(sess *session, s *persistence.Session) (any, error) {
		res, err := a.undo.revert(ctx, sess, s, undoRequest{to: p.To, dryRun: p.DryRun, force: p.Force})
		if err != nil {
			return nil, err
		}
		return map[string]any{"report": reportOf(res.report), "prompt": promptInfo{Number: res.prompt.Number, Text: res.prompt.Text}}, nil
	})
}

// _crow/redo {sessionId, dryRun?, force?} → {report, pending}.
func extRedo(ctx context.Context, a *Agent, raw json.RawMessage) (any, error) {
	p, err := decodeExt[undoParams](raw)
	if err != nil {
		return nil, err
	}
	if p.To != 0 {
		return nil, acp.InvalidParams("_crow/redo takes no \"to\": it redoes the last undo")
	}
	return a.undo.withUndoLease(ctx, p.SessionID, "redo", func(sess *session, s *persistence.Session) (any, error) {
		rep, err := a.undo.redo(ctx, sess, s, p.DryRun, p.Force)
		if err != nil {
			return nil, err
		}
		return map[string]any{"report": reportOf(rep)}, nil
	})
}
