package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// runPrompt is the work of one turn, once it holds the session's turn slot.
func (tr *turns) runPrompt(ctx, turnCtx context.Context, sess *session, s *persistence.Session, req *acp.PromptRequest, parts []persistence.Part) (*acp.PromptResponse, error) {
	// One writer per session: the turn holds its lease, and every write it
	// makes is fenced by it. A heartbeat that finds it lost aborts the turn.
	turnCtx, lose := context.WithCancelCause(turnCtx)
	defer lose(nil)
	if err := tr.leases.hold(turnCtx, sess, lose); err != nil {
		return nil, storeError("prompt", err)
	}
	defer tr.leases.release(ctx, sess)
	tr.undo.reportPendingUndos(turnCtx, sess, s)

	if stop, handled, err := tr.slash(turnCtx, sess, s, req.Prompt); handled {
		if turnCtx.Err() != nil {
			return tr.interruptedResponse(ctx, turnCtx, s.ID)
		}
		if err != nil {
			return nil, err
		}
		return &acp.PromptResponse{StopReason: stop}, nil
	}

	// Writes outlive a cancelled turn: what the user saw must be kept. They
	// go through a.writes(sess), fenced by the turn's lease.
	persistCtx := context.WithoutCancel(turnCtx)
	user := &persistence.Message{Role: persistence.RoleUser, Content: modelText(parts), Parts: storedParts(parts), Status: persistence.StatusComplete}
	counter := tr.build.CounterFor(tr.sessionModel(s))
	// A prompt cancelled while it is counted is stored uncounted (the
	// next request counts it).
	countTokensContext(turnCtx, counter, user)
	if err := tr.writes(sess).AppendMessages(persistCtx, s.ID, user); err != nil {
		return nil, storeError("save prompt", err)
	}
	tr.undo.startRecording(sess, s, user.Seq)
	defer tr.undo.endRecording(persistCtx, sess, s)
	if turnCtx.Err() != nil {
		return tr.interruptedResponse(ctx, turnCtx, s.ID)
	}
	titled := tr.titleAfterPrompt(persistCtx, sess, s, parts)

	var usage *request.TurnUsage // the turn's, for the prompt response
	if t := sess.runningTurn(); t != nil {
		usage = &t.usage
	}
	stop, err := tr.runTurn(turnCtx, persistCtx, sess, s)
	if turnCtx.Err() != nil {
		return tr.interruptedResponse(ctx, turnCtx, s.ID)
	}
	if err != nil {
		tr.log.Warn("turn failed", zap.String("session", s.ID), zap.Error(err))
		return nil, err
	}
	if titled && tr.cfg.ModelTitles && stop == acp.StopEndTurn {
		tr.titleFromModel(turnCtx, persistCtx, sess, s, modelText(parts))
	}
	res := &acp.PromptResponse{StopReason: stop}
	if tr.cfg.PromptUsage {
		res.Usage = usage.Wire()
	}
	return res, nil
}

// interruptedResponse answers a turn whose context ended: cancelled, or
// aborted because its lease was lost.
func (tr *turns) interruptedResponse(ctx, turnCtx context.Context, sessionID string) (*acp.PromptResponse, error) {
	if errors.Is(context.Cause(turnCtx), persistence.ErrLeaseLost) {
		return nil, leaseLostError("go on with session " + sessionID)
	}
	return cancelledResponse(ctx)
}

// cancelledResponse answers a cancelled turn. Cancellation is never an
// error (ACP: stopReason "cancelled"), except when the client cancelled the
// prompt request itself with $/cancel_request, which is answered -32800.
func cancelledResponse(ctx context.Context) (*acp.PromptResponse, error) {
	if errors.Is(context.Cause(ctx), acp.ErrRequestCancelled) {
		return nil, acp.ErrRequestCancelled
	}
	return &acp.PromptResponse{StopReason: acp.StopCancelled}, nil
}

// replyOnce is one model request of a turn: a request the endpoint refuses
// as too large for its window is retried once after compacting, once per
// turn (*recovered), never in a loop.
func (tr *turns) replyOnce(ctx, persistCtx context.Context, sess *session, s *persistence.Session, recovered *bool) (*provider.Result, error) {
	res, err := tr.streamReply(ctx, persistCtx, sess, s)
	var refused *request.Refusal
	if errors.As(err, &refused) && !*recovered {
		*recovered = true
		if err = tr.build.RecoverOverflow(ctx, &sess.req, s, refused); err == nil {
			res, err = tr.streamReply(ctx, persistCtx, sess, s)
		}
	}
	if errors.As(err, &refused) {
		err = refused.Err
	}
	return res, err
}

// runTurn calls the model until it answers without tool calls or the cap on
// model calls is reached.
func (tr *turns) runTurn(ctx, persistCtx context.Context, sess *session, s *persistence.Session) (acp.StopReason, error) {
	tr.awaitMCP(ctx, sess, s)
	recovered := false // one overflow recovery per turn, never a loop
	guard := newLoopGuard()
	for call := 0; call < request.MaxModelCalls(tr.cfg.MaxModelCalls, tr.sessionModel(s)); call++ {
		res, err := tr.replyOnce(ctx, persistCtx, sess, s, &recovered)
		if err != nil {
			return "", err
		}
		if len(res.ToolCalls) == 0 {
			return stopReason(res.FinishReason), nil
		}
		if err := tr.runToolCalls(ctx, persistCtx, sess, s, res.ToolCalls, guard); err != nil {
			if q, ok := err.(*askedInText); ok && ctx.Err() == nil {
				return tr.replyWithQuestion(persistCtx, sess, s, q)
			}
			return "", err
		}
		if ctx.Err() != nil {
			return acp.StopCancelled, nil
		}
		if guard.stopped() {
			tr.sendUpdate(ctx, sess, loopStopUpdate(tr.capabilities()))
			return acp.StopEndTurn, nil
		}
	}
	return acp.StopMaxTurnRequests, nil
}

// streamReply makes one model request from the stored context and forwards
// the deltas. The reply is stored when its first delta arrives (status
// streaming), saved again every PartialSaveInterval while it grows (sooner
// when it grows fast: partialSaveBytes), and finalised when the stream ends
// (complete, cancelled or failed), so a crash keeps what the user saw up
// to the last save.
func (tr *turns) streamReply(ctx, persistCtx context.Context, sess *session, s *persistence.Session) (*provider.Result, error) {
	tr.models.AwaitDiscovery(ctx, tr.sessionModel(s).Name)
	msgs, err := tr.build.Prepare(ctx, &sess.req, s)
	if err != nil {
		return nil, err
	}
	model := tr.sessionModel(s)
	if !model.Images {
		msgs = withoutImages(msgs)
	}
	reply := &partialReply{a: tr.core, ctx: persistCtx, sess: sess, store: tr.writes(sess), counter: tr.build.CounterFor(model)}
	req := provider.Request{Model: model.Name, Messages: msgs, Tools: tr.toolDefinitions(sess, s),
		ReasoningHistory: model.ReasoningHistory, ToolCallIDs: model.ToolCallIDs, InlineThink: model.InlineThink, BodyCache: &sess.req.Cache.Body}
	onEvent, redacted := tr.redactReply(func(ev provider.Event) error {
		switch ev.Kind {
		case provider.EventText:
			reply.text.WriteString(ev.Text)
		case provider.EventReasoning:
			reply.reasoning.WriteString(ev.Text)
		default:
			return nil
		}
		// Saved before it is shown: what the client sees is stored (and
		// the stored row names the chunk's message).
		if err := reply.save(time.Now()); err != nil {
			return err
		}
		chunk := &acp.ContentChunk{Content: acp.TextBlock(ev.Text), MessageID: messageID(reply.msg)}
		var u acp.SessionUpdate
		if ev.Kind == provider.EventText {
			u.AgentMessageChunk = chunk
		} else {
			u.AgentThoughtChunk = chunk
		}
		reply.sent(ev, tr.deliver(ctx, sess, u))
		return nil
	})
	res, attempts, streamErr := tr.streamWithRetry(ctx, tr.models.ClientFor(model), s.ID, req, onEvent)
	if res == nil {
		res = &provider.Result{}
	}
	redacted(res)
	if t := sess.runningTurn(); res.Usage != nil && t != nil {
		t.usage.Add(*res.Usage) // the turn's, for the prompt response
	}
	tr.build.AfterModelRequest(ctx, &sess.req, s, req, res)
	if !tr.build.DetectTruncation(ctx, &sess.req, s, model, req, res) {
		sess.req.ObserveUsage(res)
	}
	if streamErr == nil {
		tr.models.NoteAccepted(model, res)
	}
	msg := reply.final(res)
	switch {
	case reply.err != nil:
		msg.Status = persistence.StatusFailed
	case ctx.Err() != nil:
		msg.Status = persistence.StatusCancelled
	case streamErr != nil:
		msg.Status = persistence.StatusFailed
	default:
		for _, c := range res.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, persistence.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
	}
	if err := reply.finish(msg); err != nil {
		// The stored row still says "streaming": mark it failed once the
		// store answers again.
		tr.finishLater(sess, msg, reply.asStored())
		return nil, storeError("save reply", err)
	}
	if len(msg.ToolCalls) > 0 {
		sess.req.KeepReasoningItems(msg.ID, res.ReasoningItems)
	}
	if reply.err != nil {
		return nil, storeError("save reply", reply.err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := tr.auth.authError(streamErr); err != nil {
		return nil, err
	}
	if streamErr != nil {
		if ov := provider.OverflowOf(streamErr); ov != nil && !attempts.forwarded {
			return nil, &request.Refusal{Overflow: ov, Err: modelError(streamErr, attempts)}
		}
		return nil, modelError(streamErr, attempts)
	}
	return res, nil
}

// partialReply is an assistant reply being streamed into the store.
type partialReply struct {
	a               *core
	ctx             context.Context
	sess            *session
	store           Store // the session's fenced writes (Agent.writes)
	text, reasoning strings.Builder
	counter         compaction.Counter   // counts the reply as it is written
	msg             *persistence.Message // the stored row; nil until the first delta
	saved           time.Time
	savedBytes      int   // of text and reasoning at the last save
	err             error // the save that failed; the stream was abandoned
	// savedText and savedReasoning are what the row holds: the text of
	// its last successful write.
	savedText, savedReasoning string
	// streamed is how much of text and reasoning, from the start, went
	// out in chunk frames the frame log keeps (persistence.Streamed);
	// a chunk not delivered ends it (later chunks no longer line up).
	streamed persistence.Streamed
	gap      bool // a chunk was not delivered or not journaled
}

// sent notes whether the chunk just written to text or reasoning reached
// the client and the frame log as it is: a chunk that is not valid UTF-8
// reaches the frame as U+FFFD (encoding/json), not as the stored bytes.
func (r *partialReply) sent(ev provider.Event, delivered bool) {
	if r.gap = r.gap || !delivered || !r.a.framesLogged() || !utf8.ValidString(ev.Text); r.gap {
		r.streamed = persistence.Streamed{}
		return
	}
	if ev.Kind == provider.EventText {
		r.streamed.Content = r.text.Len()
	} else {
		r.streamed.Reasoning = r.reasoning.Len()
	}
}

// streamedOf is what of m's text the frames hold: the part it shares with
// what was streamed (a final text may differ from the deltas).
func (r *partialReply) streamedOf(m *persistence.Message) persistence.Streamed {
	if r.gap {
		return persistence.Streamed{}
	}
	common := func(a string, b string) int {
		if strings.HasPrefix(a, b) { // every save but a final text that differs
			return len(b)
		}
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	return persistence.Streamed{
		Content:   common(m.Content, r.text.String()[:r.streamed.Content]),
		Reasoning: common(m.Reasoning, r.reasoning.String()[:r.streamed.Reasoning]),
	}
}

// A growing reply is saved once PartialSaveInterval has passed since its
// last save, or sooner, but never within partialSaveGap of it, once
// partialSaveBytes were added. Each save costs a message_updated event (a
// ~260-byte record besides the text it adds) and commits the frames sent
// since the last one, so a save every 100 ms cost a slow stream ten row
// pairs a second for a few tokens each. 4 KB (about 1,000 tokens) keeps a
// save's fixed cost under a tenth of the text it adds, and bounds what a
// crash loses of a fast stream (any faster than 4 KB/s, i.e. 1,000
// tokens/s) to 4 KB; slower streams save once a PartialSaveInterval.
//
// A save rewrites the stored text whole (it is plain in its row), so its
// cost grows with the reply: the gap grows with it too, by partialSaveGap
// per partialSaveGapStep already saved, up to PartialSaveInterval. A
// 4 MB reply streamed fast is then saved about once a second (it was
// ten times, each writing megabytes), and a crash still loses at most a
// second of it.
const (
	partialSaveBytes   = 4 << 10
	partialSaveGap     = 100 * time.Millisecond
	partialSaveGapStep = 256 << 10
)

// due reports whether the reply, saved before, is saved again at now.
func (r *partialReply) due(now time.Time) bool {
	since := now.Sub(r.saved)
	grown := r.text.Len() + r.reasoning.Len() - r.savedBytes
	gap := min(partialSaveGap*time.Duration(1+r.savedBytes/partialSaveGapStep), r.a.cfg.PartialSaveInterval)
	return since >= r.a.cfg.PartialSaveInterval || since >= gap && grown >= partialSaveBytes
}

// save stores the reply when it starts (at its first delta) and then when
// it is due.
func (r *partialReply) save(now time.Time) error {
	if r.msg != nil && !r.due(now) {
		return nil
	}
	var err error
	if r.msg == nil {
		m := &persistence.Message{Role: persistence.RoleAssistant, Content: r.text.String(),
			Reasoning: r.reasoning.String(), Status: persistence.StatusStreaming}
		countTokens(r.counter, m)
		if err = r.store.AppendMessages(r.ctx, r.sess.id, m); err == nil {
			r.msg = m
		}
	} else {
		r.msg.Content, r.msg.Reasoning = r.text.String(), r.reasoning.String()
		r.msg.Streamed = r.streamedOf(r.msg)
		countTokens(r.counter, r.msg)
		err = r.sess.req.UpdateMessage(r.ctx, r.store, r.msg)
	}
	if err != nil {
		r.err = err
		return err
	}
	r.saved, r.savedBytes = now, r.text.Len()+r.reasoning.Len()
	r.savedText, r.savedReasoning = r.msg.Content, r.msg.Reasoning
	return nil
}

// asStored is the reply's row as its last successful write left it, marked
// failed (nil: never stored): what finishLater writes when the store takes
// writes but refuses the final reply.
func (r *partialReply) asStored() *persistence.Message {
	if r.msg == nil {
		return nil
	}
	m := &persistence.Message{ID: r.msg.ID, SessionID: r.msg.SessionID, Role: persistence.RoleAssistant,
		Content: r.savedText, Reasoning: r.savedReasoning, Status: persistence.StatusFailed}
	countTokens(r.counter, m)
	return m
}

// final is the reply as it ended: the client's accumulated text, or what
// was streamed when the client returned none.
func (r *partialReply) final(res *provider.Result) *persistence.Message {
	m := &persistence.Message{Role: persistence.RoleAssistant, Content: res.Text, Reasoning: res.Reasoning,
		Status: persistence.StatusComplete}
	if m.Content == "" {
		m.Content = r.text.String()
	}
	if m.Reasoning == "" {
		m.Reasoning = r.reasoning.String()
	}
	return m
}

// finish writes the final reply: an update of the stored row, or a new row
// if nothing was stored yet and there is something to keep.
func (r *partialReply) finish(m *persistence.Message) error {
	countTokens(r.counter, m)
	if r.msg != nil {
		m.ID, m.SessionID = r.msg.ID, r.msg.SessionID
		m.Streamed = r.streamedOf(m)
		return r.sess.req.UpdateMessage(r.ctx, r.store, m)
	}
	if r.err != nil || (m.Content == "" && m.Reasoning == "" && len(m.ToolCalls) == 0) {
		return nil
	}
	return r.store.AppendMessages(r.ctx, r.sess.id, m)
}

func stopReason(f provider.FinishReason) acp.StopReason {
	switch f {
	case provider.FinishLength:
		return acp.StopMaxTokens
	case provider.FinishContentFilter:
		return acp.StopRefusal
	default:
		return acp.StopEndTurn
	}
}

// modelError is what the client sees when the model endpoint fails: one
// sentence saying what happened and what to do (the partial reply is
// already stored), and in error.data what a client may act on: the HTTP
// status, whether trying again later may help, whether part of the reply
// was shown (and kept) before the failure.
func modelError(err error, st retryState) error {
	tries := ""
	if st.attempts > 1 {
		tries = fmt.Sprintf(" after %d attempts", st.attempts)
	}
	data := map[string]any{"retryable": retryable(err)}
	var msg string
	var api *provider.APIError
	var timeout *provider.TimeoutError
	switch {
	case errors.As(err, &timeout):
		msg = timeoutText(timeout, tries)
	case errors.As(err, &api):
		data["httpStatus"] = api.StatusCode
		msg = fmt.Sprintf("The model endpoint answered %d%s: %s", api.StatusCode, tries, detail(api.Message))
	default:
		msg = fmt.Sprintf("The model request failed%s: %s%s", tries, detail(err.Error()), limitHint(err))
	}
	advice := modelAdvice(api, retryable(err))
	ov := provider.OverflowOf(err)
	switch {
	case ov != nil:
		data["reason"] = "context_window_exceeded"
		if ov.Window > 0 {
			data["window"] = ov.Window
		}
		advice = "the request does not fit the model's context window: run /compact or start a new session, or give the model server a larger context"
	case serverParserFailed(err):
		data["reason"] = "server_parser_failed"
		advice = parserAdvice
	case timeout != nil:
		advice = ""
	}
	if st.forwarded {
		data["partial"] = true
		msg += " (the partial reply is kept in the session)"
	}
	if advice != "" {
		msg += "; " + advice
	}
	e := acp.InternalError("%s", sentence(msg))
	e.Data = data
	return e
}

// timeoutText says in plain words which of the client's timeouts stopped
// a model request, its value and the setting that raises it.
func timeoutText(t *provider.TimeoutError, tries string) string {
	if t.Idle {
		return fmt.Sprintf("The model endpoint sent nothing for %s%s, the idle timeout (setting requests.idle_timeout, env CROW_MODEL_IDLE_TIMEOUT): a local server may still be reading a long prompt; raise the setting, or try again", t.After, tries)
	}
	return fmt.Sprintf("The model's reply took longer than the request timeout of %s%s (setting requests.timeout, env CROW_MODEL_TIMEOUT): raise the setting for a slow or local model, or try again", t.After, tries)
}

// limitHint names the setting behind a limit a model request went past.
func limitHint(err error) string {
	var limit *provider.LimitError
	switch {
	case errors.As(err, &limit) && limit.What == provider.LimitReply:
		return " (setting limits.reply_bytes, env CROW_MAX_REPLY_BYTES)"
	case errors.As(err, &limit) && limit.What == provider.LimitArguments:
		return " (setting limits.arguments_bytes, env CROW_MAX_ARGUMENTS_BYTES)"
	case errors.As(err, &limit) && limit.What == provider.LimitToolCalls:
		return " (a fixed bound: models make a few calls at a time; none of them was run)"
	case errors.As(err, &limit):
		return " (setting limits.event_bytes, env CROW_MAX_EVENT_BYTES)"
	}
	return ""
}

// modelAdvice is what the user can do about a failed model request.
func modelAdvice(api *provider.APIError, retryable bool) string {
	switch {
	case api != nil && validRetryAfter(api.RetryAfter):
		// Only a well-formed header is repeated: some endpoints echo
		// credentials in it.
		return "the endpoint asks to wait " + api.RetryAfter + " before trying again"
	case api == nil:
		return "check that the endpoint is reachable and try again"
	case retryable:
		return "try again later"
	case api.StatusCode == 401 || api.StatusCode == 403:
		return "check the API key (OPENAI_API_KEY)"
	case api.StatusCode == 404:
		return "check the endpoint URL and the model name"
	default:
		return "check the model and its settings, then try again"
	}
}

// beginTurn registers a running turn; one turn per session at a time. A
// turn that has answered but whose answer is still being written is waited
// for: the client may already have sent the next prompt.
//
// It is where a prompt looks its session up: the session is returned with
// the turn registered on it. a.mu is held while a turn registers, so the
// cap on concurrent turns counts every session's.
func (tr *turns) beginTurn(ctx context.Context, sessionID string) (*session, context.Context, error) {
	for {
		tr.sessions.mu.Lock()
		sess := tr.sessions.getLocked(sessionID)
		sess.mu.Lock()
		t := sess.turn
		answered := t != nil && t.answered
		sess.mu.Unlock()
		if t == nil {
			if tr.sessions.runningLocked() >= tr.cfg.MaxConcurrentTurns {
				tr.sessions.mu.Unlock()
				return nil, nil, tr.tooManyTurns()
			}
			turnCtx, cancel := context.WithCancel(ctx)
			sess.mu.Lock()
			sess.turn = &turn{cancel: cancel, done: make(chan struct{})}
			sess.req.BeginTurn(sess.turn) // the builder's once-a-turn rules
			sess.mu.Unlock()
			tr.sessions.mu.Unlock()
			return sess, turnCtx, nil
		}
		tr.sessions.mu.Unlock()
		if !answered {
			return nil, nil, acp.InvalidRequest("A prompt is already running in session %s: wait for it or send session/cancel.", sessionID)
		}
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// cancelGrace is how long a cancelled turn may take to stop before its
// prompt is answered anyway.
func (tr *turns) cancelGrace() time.Duration {
	if tr.cfg.CancelGrace > 0 {
		return tr.cfg.CancelGrace
	}
	return DefaultCancelGrace
}

func validRetryAfter(v string) bool {
	_, ok := parseRetryAfter(v, time.Now())
	return ok && v != ""
}
