// Package framelog is the frame log: it records a connection's JSON-RPC
// frames, byte for byte, in the store's append-only event log, attributed to the session and the prompt
// turn they belong to, and derives the normalised lifecycle events (session
// created, loaded, closed; turn started, completed, cancelled, failed).
//
// acp.Options.OnFrame hands every frame to Log.OnFrame. Frames are
// buffered and committed in batches by a background writer (every
// FlushInterval, or sooner when maxBatch frames are waiting), with these
// guarantees:
//
//   - A response reaches the client only after it, and every frame before
//     it, is committed: OnFrame commits synchronously before a response is
//     written. One exception: a successful session/load's request and
//     response are committed with the updates sent right after the
//     response, in its session_loaded event, when the agent records that
//     event (Record, once those updates are sent; at most openLoadGrace
//     later without it): a crash in between loses the record of that load,
//     never anything stored. Another: a response outside any session sent
//     before the connection's record is written (initialize, while the
//     store opens) is committed right after the record, in order.
//   - The store wrapper returned by Store commits pending frames before every
//     write that records a projection event (messages, compactions and their
//     undo, imports), so a session's seq order is causal order: the prompt
//     frame comes before the user message it produced.
//   - Notifications (streamed updates) may be lost in a crash if they were
//     sent less than FlushInterval before it, and the run of updates a turn
//     is streaming is held back by the timer until the next write of the
//     session takes it (the reply's next save) or anything else is queued
//     after it, for at most maxRunHold (2 s): a crash loses the updates
//     sent since the reply's last save, at most 2 s of them; what the model
//     said is kept by the messages table (the reply is saved as it
//     streams).
//
// One event is one frame, except that consecutive session/update frames
// sent in one turn and committed together share one event, one frame per
// line (see persistence.Event.Frames), and that a successful session/load
// is one session_loaded event: what its replay sent (counted, never stored
// again) and its own frames, stored as differences from the connection's
// previous load of the session (loadrecord.go; Frames reads them back).
//
// If the store cannot be written (disk full, read-only), a batch is dropped
// and logged; the operations that need storage fail on their own. A reply
// streamed while a batch was dropped no longer leaves its text to its chunk
// frames: its records carry it (Store's UpdateMessage, framesKept).
package framelog

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/secret"
)

const (
	defaultFlushInterval = 20 * time.Millisecond
	maxBatch             = 512 // frames waiting that wake the writer
)

// Options configure a Log.
type Options struct {
	ConnectionID  string        // required: the stream of frames outside any session
	FlushInterval time.Duration // 0: defaultFlushInterval
	Logger        *zap.Logger
	// MaxPromptBytes is the agent's prompt limit: a session/prompt frame
	// larger than it is held until its answer, and when the answer refuses
	// it as too large only a marker (size, digest) is kept, never the body.
	// 0: every frame is kept as it is.
	MaxPromptBytes int
}

// EventStore is what the frame log needs of the store to record frames: the
// connection's record, the event log, and the session a frame names.
type EventStore interface {
	CreateConnection(ctx context.Context, c *persistence.Connection) error
	AppendEvents(ctx context.Context, evs ...*persistence.Event) error
	LastTurn(ctx context.Context, stream string) (int64, error)
	GetSession(ctx context.Context, id string) (*persistence.Session, error)
}

var _ EventStore = persistence.Store(nil)

// Log records one connection. Its methods are safe for concurrent use.
type Log struct {
	store EventStore
	conn  string
	opts  Options
	log   *zap.Logger

	mu       sync.Mutex
	pending  []*persistence.Event
	sessions map[string]*sessionState // sessions seen on this connection
	requests map[string]request       // inbound requests awaiting our response, by id
	calls    map[string]request       // our requests awaiting the client's response, by id

	flushMu  sync.Mutex  // one batch at a time, in order
	off      atomic.Bool // the connection could not be recorded: no frame log
	recorded atomic.Bool // the connection's record was written (or failed)
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	closed   bool

	// lost counts the batches of frames dropped because the store refused
	// them; replies holds, for each streamed reply this connection stored
	// and has not written final, lost when its row was first written.
	// Both are guarded by flushMu (framesKept).
	lost    uint64
	replies map[int64]uint64
}

type sessionState struct {
	lastTurn int64
	active   int64        // the running turn; 0: none
	replay   *replayTally // a session/load is replaying the session
	// load is a session/load answered and not yet recorded: it takes the
	// updates sent right after its response (loadrecord.go).
	load *openLoad
	// replayNext counts the session/loads read while another load was
	// replaying or open (the read loop runs ahead of the dispatcher, which
	// handles them in order): the next one's replay starts once the
	// earlier load is recorded (startQueuedReplay), so that it takes
	// neither the earlier replay's frames nor the updates after the
	// earlier response.
	replayNext int
	// lastLoad is the frames of the last load recorded on this
	// connection, which the next one is stored as differences from.
	lastLoad []loadFrame
}

// openLoad is a successful session/load between its response and its
// session_loaded event.
type openLoad struct {
	at     time.Time // of the response
	frames []loadFrame
	bytes  int
	record map[string]any
}

// openLoadGrace is how long a load waits for the agent's session_loaded
// record (sent once the updates after its response are) before it is
// recorded without it; maxOpenLoad bounds the updates it takes.
const (
	openLoadGrace = time.Second
	maxOpenLoad   = 64 << 10
)

// request is what the frame log remembers about a request until its response.
type request struct {
	method  string
	session string // "" if outside any session
	turn    int64
	held    *persistence.Event   // an over-size prompt or a load's frame, recorded with its answer
	after   []*persistence.Event // frames about a held prompt ($/cancel_request), recorded right after it
	load    bool                 // a session/load whose frames go into its session_loaded event
}

// Open starts the frame log of a connection. The connection's record is
// written in the background, before any frame: serving need not wait for a
// database write (the first after a checkpoint also syncs the WAL), nor for
// the store to open. A response in a session waits for it, as for every
// frame before it; one outside any session answered before the record is
// written (initialize: it stores nothing) does not, and its frames are
// committed right after the record, in order. If the record
// cannot be written (a read-only or full database), the frame log turns
// itself off, logs why, and the connection is served without a frame log.
func Open(ctx context.Context, store EventStore, opts Options) *Log {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = defaultFlushInterval
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.ConnectionID == "" {
		panic("framelog: Options.ConnectionID is required")
	}
	j := &Log{
		store: store, conn: opts.ConnectionID, opts: opts, log: log,
		sessions: make(map[string]*sessionState),
		replies:  make(map[int64]uint64),
		requests: make(map[string]request),
		calls:    make(map[string]request),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	// Held until the record is written: no batch commits before it.
	j.flushMu.Lock()
	go func() {
		host, _ := os.Hostname()
		err := store.CreateConnection(context.WithoutCancel(ctx), &persistence.Connection{ID: opts.ConnectionID, PID: os.Getpid(), Host: host})
		if err != nil {
			log.Warn("frame log unavailable; serving without it", zap.Error(err))
			j.off.Store(true)
			j.lost++
			j.mu.Lock()
			j.pending = nil
			j.mu.Unlock()
		}
		j.recorded.Store(true)
		j.flushMu.Unlock()
		// What was answered before the record (initialize) follows it
		// now, in order.
		j.flush(context.Background(), true)
		j.writer()
	}()
	return j
}

// Recording reports whether the connection's frames are kept: false once
// the frame log turned itself off (the connection could not be recorded).
func (j *Log) Recording() bool { return !j.off.Load() }

func (j *Log) writer() {
	defer close(j.done)
	t := time.NewTicker(j.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
		case <-j.kick:
		}
		j.flush(context.Background(), true)
	}
}

// Close records session_closed for every session of the connection, commits
// what is pending and stops the writer.
func (j *Log) Close() {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return
	}
	j.closed = true
	for _, r := range j.requests {
		if r.held != nil { // never answered: kept as it came
			j.addHeldLocked(r)
		}
	}
	for id, st := range j.sessions {
		j.finishLoadLocked(id, st)
		j.lifecycleLocked(id, 0, persistence.EventSessionClosed, map[string]any{"reason": "connection closed"})
	}
	j.mu.Unlock()
	close(j.stop)
	<-j.done
	j.Flush(context.Background())
}

// Flush commits the pending events in one transaction. A batch the store
// refuses is dropped and logged.
func (j *Log) Flush(ctx context.Context) { j.flush(ctx, false) }

// flush commits the pending events; holdRun (the writer's timer) keeps an
// open streamed run back (see openRunLocked).
func (j *Log) flush(ctx context.Context, holdRun bool) {
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	j.mu.Lock()
	now := time.Now()
	j.finishStaleLoadsLocked(now)
	batch := j.pending
	j.pending = nil
	if n := len(batch); holdRun && n > 0 && j.openRunLocked(batch[n-1], now) {
		j.pending = append(j.pending, batch[n-1])
		batch = batch[:n-1]
	}
	j.mu.Unlock()
	if len(batch) == 0 || j.off.Load() {
		return
	}
	// The store packs streamed runs (persistence.PackEvents).
	if err := j.store.AppendEvents(context.WithoutCancel(ctx), batch...); err != nil {
		j.log.Error("frame log: events dropped", zap.Int("events", len(batch)), zap.Error(err))
		j.lost++
		// A load whose session_loaded event was dropped cannot be the
		// base the next load of its session is stored as differences
		// from (that load is stored whole instead).
		j.mu.Lock()
		for _, e := range batch {
			if st := j.sessions[e.Stream]; st != nil && e.Kind == persistence.EventSessionLoaded {
				st.lastLoad = nil
			}
		}
		j.mu.Unlock()
	}
}

// Record appends a lifecycle event to a session (in its running turn, if
// any) and commits it before returning: use it for facts later steps depend
// on, such as compaction_started. session_loaded is the exception: the
// journal writes that event for each load or resume, and the agent's
// record only adds to it (during the replay, or once the updates after
// the response are sent, which then closes it); with no load of the
// session to add to (one made during a turn, or recorded already because
// another write came first) it is dropped.
func (j *Log) Record(ctx context.Context, sessionID string, kind persistence.EventKind, data any) {
	j.mu.Lock()
	st := j.sessions[sessionID]
	if kind == persistence.EventSessionLoaded {
		// The agent's account of a replay joins the load's one event;
		// after the response (and the updates that follow it) it also
		// closes the load.
		open := st != nil && st.load != nil
		m, _ := data.(map[string]any)
		switch {
		case open:
			if replay, _ := st.load.record["replay"].(map[string]any); replay != nil {
				maps.Copy(replay, m)
			}
			j.finishLoadLocked(sessionID, st)
		case st != nil && st.replay != nil:
			st.replay.agent = m
		}
		if st != nil {
			startQueuedReplay(st) // the load is recorded (maybe early: a write came first)
		}
		j.mu.Unlock()
		if open {
			j.Flush(ctx)
		}
		return
	}
	turn := int64(0)
	if st != nil {
		turn = st.active
	} else if kind == persistence.EventSessionCreated {
		// The agent made a session no request named (a subagent's child,
		// a /fork): it tells the frame log so, and the frames sent about it
		// on this connection go to its stream.
		j.sessions[sessionID] = &sessionState{}
	}
	j.lifecycleLocked(sessionID, turn, kind, data)
	j.mu.Unlock()
	j.Flush(ctx)
}

// envelope is the part of a frame the frame log reads to attribute it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type sessionParams struct {
	SessionID string          `json:"sessionId"`
	RequestID json.RawMessage `json:"requestId"` // $/cancel_request
}

// OnFrame records one frame; it is acp.Options.OnFrame. It must be fast: it
// runs on the read loop and under the writer's lock.
func (j *Log) OnFrame(dir acp.Direction, raw []byte) {
	if j.off.Load() {
		return
	}
	sid, isUpdate := sessionUpdateSession(raw, dir == acp.Outbound)
	// The hot paths: a load's replay is counted, not recorded; a streamed
	// update that continues the pending run of its session costs an
	// append, no event.
	if isUpdate && dir == acp.Outbound && j.absorbUpdate(sid, raw) {
		return
	}
	ev := &persistence.Event{
		ConnectionID: j.conn,
		At:           time.Now().UTC(),
		Body:         bytes.Clone(raw),
		Direction:    persistence.DirIn,
	}
	if dir == acp.Inbound {
		// MCP servers' env values and headers are credentials: the log
		// keeps the structure, never the values, whatever frame (request,
		// notification, invalid) a client put them in.
		ev.Body = secret.MaskMCPServers(ev.Body)
	}
	if dir == acp.Outbound {
		ev.Direction = persistence.DirOut
	}
	if isUpdate {
		ev.Kind, ev.Method = persistence.EventNotification, "session/update"
		j.notification(ev, sessionParams{SessionID: sid})
		return
	}
	var env envelope
	if json.Unmarshal(raw, &env) != nil {
		env = envelope{} // recorded as invalid below
	}
	var p sessionParams
	if len(env.Params) > 0 && env.Params[0] == '{' {
		_ = json.Unmarshal(env.Params, &p)
	}
	hasID := len(env.ID) > 0
	switch {
	case env.Method != "" && hasID:
		ev.Kind, ev.Method = persistence.EventRequest, env.Method
		if dir == acp.Inbound {
			j.inboundRequest(ev, env.ID, p.SessionID)
		} else {
			j.outboundRequest(ev, idKey(env.ID), p.SessionID)
		}
	case env.Method != "":
		ev.Kind, ev.Method = persistence.EventNotification, env.Method
		j.notification(ev, p)
	case hasID && (len(env.Result) > 0 || len(env.Error) > 0):
		ev.Kind = persistence.EventResponse
		if len(env.Error) > 0 {
			ev.Kind = persistence.EventErrorReply
		}
		if dir == acp.Inbound {
			j.inboundResponse(ev, idKey(env.ID))
		} else {
			j.outboundResponse(ev, idKey(env.ID), env.Result, env.Error)
		}
	default:
		ev.Stream, ev.Kind = j.conn, persistence.EventInvalid
		j.mu.Lock()
		j.addLocked(ev)
		j.mu.Unlock()
	}
}

// idKey normalises an id so that 1 and 1.0 are one key (jsonrpc2 echoes
// ours as it parsed them; the client's are echoed byte for byte anyway).
func idKey(id json.RawMessage) string {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return string(id)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// heldForSize are the requests the agent refuses for their size (a prompt,
// a session's systemPrompt): one larger than MaxPromptBytes is held until
// its answer, and kept only as a marker when that refuses it.
var heldForSize = map[string]bool{"session/prompt": true, "session/new": true, "session/load": true, "session/resume": true, "session/fork": true}

func (j *Log) inboundRequest(ev *persistence.Event, rawID json.RawMessage, sid string) {
	// Knowing whether a session exists may take a read; do it before
	// locking.
	known := j.known(sid, ev.Method != "session/new")
	j.mu.Lock()
	defer j.mu.Unlock()
	req := request{method: ev.Method}
	if known {
		st := j.sessions[sid]
		req.session = sid
		if ev.Method == "session/prompt" {
			st.lastTurn++
			req.turn = st.lastTurn
			if st.active == 0 {
				st.active = req.turn
			}
			j.lifecycleLocked(sid, req.turn, persistence.EventTurnStarted, map[string]any{"requestId": rawID})
		} else {
			req.turn = st.active
			switch {
			case ev.Method == "session/load" && st.active == 0:
				req.load = true
				if st.load != nil || st.replay != nil {
					st.replayNext++
				} else {
					st.replay = &replayTally{}
				}
			case ev.Method == "session/resume" && st.active == 0:
				req.load = true // no replay: its frames only
			}
		}
	}
	ev.Stream, ev.Turn = j.streamOf(req.session), req.turn
	if req.load || heldForSize[ev.Method] && j.opts.MaxPromptBytes > 0 && len(ev.Body) > j.opts.MaxPromptBytes {
		// A load's request joins its session_loaded event (if it
		// succeeds); an over-size prompt (or session setup, whose
		// systemPrompt is bounded too) waits for its answer.
		req.held = ev
	} else {
		j.addLocked(ev)
	}
	j.requests[idKey(rawID)] = req
}

func (j *Log) outboundRequest(ev *persistence.Event, id, sid string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	req := request{method: ev.Method}
	if st := j.sessions[sid]; st != nil {
		req.session, req.turn = sid, st.active
	}
	j.calls[id] = req
	ev.Stream, ev.Turn = j.streamOf(req.session), req.turn
	j.addLocked(ev)
}

func (j *Log) notification(ev *persistence.Event, p sessionParams) {
	j.mu.Lock()
	defer j.mu.Unlock()
	sid := p.SessionID
	var held *request // the request a cancel names, if the log holds it back
	if ev.Method == "$/cancel_request" && len(p.RequestID) > 0 {
		if r, ok := j.requests[idKey(p.RequestID)]; ok {
			sid = r.session
			if r.held != nil {
				held = &r
			}
		} else if r, ok := j.calls[idKey(p.RequestID)]; ok {
			sid = r.session
		}
	}
	if st := j.sessions[sid]; st != nil {
		ev.Stream, ev.Turn = sid, st.active
	} else {
		ev.Stream = j.conn
	}
	// A cancel is recorded after the request it names. A held load's
	// request goes to the log now (that load is then recorded frame by
	// frame, as loads were before); a held prompt may yet be refused as
	// too large and kept only as a marker, so the cancel waits for it.
	switch {
	case held != nil && held.load:
		j.releaseLoadLocked(idKey(p.RequestID), *held)
	case held != nil && len(held.after) < maxHeldAfter:
		held.after = append(held.after, ev)
		j.requests[idKey(p.RequestID)] = *held
		return
	}
	j.addLocked(ev)
}

// PromptAccepted records the oldest prompt of the session the log holds
// for its size, with what waited behind it: the agent accepted it (its
// text and images are within their limits), so it will not be refused as
// too large. A prompt with images is larger than the text limit: without
// this it would stay in memory until its turn ends.
func (j *Log) PromptAccepted(sessionID string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var oldest string
	for id, r := range j.requests {
		if r.session != sessionID || r.method != "session/prompt" || r.held == nil || r.load {
			continue
		}
		if oldest == "" || r.held.At.Before(j.requests[oldest].held.At) {
			oldest = id
		}
	}
	if oldest == "" {
		return
	}
	r := j.requests[oldest]
	j.addHeldLocked(r)
	r.held, r.after = nil, nil
	j.requests[oldest] = r
}

// maxHeldAfter bounds the frames kept back behind one held prompt (a
// client that cancels it again and again gets its later cancels recorded
// as they come).
const maxHeldAfter = 16

// addHeldLocked records r's held frame and then what waited for it.
func (j *Log) addHeldLocked(r request) {
	j.addLocked(r.held)
	for _, ev := range r.after {
		j.addLocked(ev)
	}
}

func (j *Log) inboundResponse(ev *persistence.Event, id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r := j.calls[id]
	delete(j.calls, id)
	ev.Method = r.method
	ev.Stream, ev.Turn = j.streamOf(r.session), r.turn
	j.addLocked(ev)
}

type resultFields struct {
	SessionID  string `json:"sessionId"`
	StopReason string `json:"stopReason"`
}

// outboundResponse records our answer and commits everything pending before
// it is written.
func (j *Log) outboundResponse(ev *persistence.Event, id string, result, errObj json.RawMessage) {
	var res resultFields
	if len(result) > 0 && result[0] == '{' {
		_ = json.Unmarshal(result, &res)
	}
	j.mu.Lock()
	r, ok := j.requests[id]
	delete(j.requests, id)
	ev.Method = r.method
	ok = ok && len(errObj) == 0
	st := j.sessions[r.session]
	var replay *replayTally
	if st != nil && r.method == "session/load" {
		replay, st.replay = st.replay, nil // the replay ends with the response
	}
	if r.load && r.held != nil && ok && st != nil && (replay != nil || r.method == "session/resume") {
		// The request, this response and the updates after it become
		// one session_loaded event (finishLoadLocked); not committed
		// before the response is written, unlike every other response.
		record := map[string]any{"via": r.method}
		if replay != nil { // a resume replays nothing
			record["replay"] = replay.record()
		}
		j.finishLoadLocked(r.session, st) // an earlier load still open
		st.load = &openLoad{at: ev.At, record: record, bytes: len(r.held.Body) + len(ev.Body),
			frames: []loadFrame{{persistence.DirIn, r.held.Body}, {persistence.DirOut, ev.Body}}}
		j.mu.Unlock()
		j.Flush(context.Background())
		return
	}
	if r.held != nil {
		if refusedAsTooLarge(errObj) {
			r.held.Body = omittedPrompt(r.held.Body, r.method, r.session)
		}
		j.addHeldLocked(r)
	}
	if st != nil && r.method == "session/load" && !ok {
		startQueuedReplay(st) // no record of this load follows
	}
	switch {
	case (r.method == "session/new" || r.method == "session/fork") && ok && res.SessionID != "":
		data := map[string]any{"connectionId": j.conn, "pid": os.Getpid()}
		if r.method == "session/new" {
			r.session = res.SessionID
		} else {
			// The request and this answer stay in the source's stream;
			// the fork's starts with its creation, naming the source.
			data["forkedFrom"] = r.session
		}
		j.sessions[res.SessionID] = &sessionState{}
		j.lifecycleLocked(res.SessionID, 0, persistence.EventSessionCreated, data)
	case r.method == "session/delete" && ok:
		// Its events went with it; the answer belongs to the connection.
		delete(j.sessions, r.session)
		r.session = ""
	}
	ev.Stream, ev.Turn = j.streamOf(r.session), r.turn
	j.addLocked(ev)
	switch {
	case (r.method == "session/load" || r.method == "session/resume") && r.session != "" && ok:
		data := map[string]any{"connectionId": j.conn, "pid": os.Getpid(), "via": r.method}
		if replay != nil {
			data["replay"] = replay.record()
		}
		j.lifecycleLocked(r.session, 0, persistence.EventSessionLoaded, data)
	case (r.method == "session/close" || r.method == "session/archive") && r.session != "" && ok:
		// Closed on this connection (archiving closes too): not again when
		// the connection ends.
		j.lifecycleLocked(r.session, 0, persistence.EventSessionClosed, map[string]any{"reason": r.method})
		delete(j.sessions, r.session)
	case r.method == "session/prompt" && r.session != "":
		if st != nil && st.active == r.turn {
			st.active = 0
		}
		kind, data := persistence.EventTurnCompleted, map[string]any{"stopReason": res.StopReason}
		if len(errObj) > 0 {
			kind, data = persistence.EventTurnFailed, map[string]any{"error": errObj}
		} else if res.StopReason == "cancelled" {
			kind = persistence.EventTurnCancelled
		}
		j.lifecycleLocked(r.session, r.turn, kind, data)
	}
	j.mu.Unlock()
	if ev.Stream == j.conn && !j.recorded.Load() {
		// Before the connection's record: the writer commits it
		// right after the record (Open), with what came before it.
		return
	}
	j.Flush(context.Background())
}

// known reports whether sid is a session, asking the store (and then
// remembering it) when load says so.
func (j *Log) known(sid string, ask bool) bool {
	if sid == "" {
		return false
	}
	j.mu.Lock()
	_, ok := j.sessions[sid]
	j.mu.Unlock()
	if ok || !ask {
		return ok
	}
	ctx := context.Background()
	if _, err := j.store.GetSession(ctx, sid); err != nil {
		return false
	}
	last, err := j.store.LastTurn(ctx, sid)
	if err != nil {
		j.log.Warn("frame log: last turn", zap.String("session", sid), zap.Error(err))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := j.sessions[sid]; !ok {
		j.sessions[sid] = &sessionState{lastTurn: last}
	}
	return true
}

func (j *Log) streamOf(session string) string {
	if session == "" {
		return j.conn
	}
	return session
}

func (j *Log) lifecycleLocked(sid string, turn int64, kind persistence.EventKind, data any) {
	if j.off.Load() {
		return // nothing is recorded, nor goes with a write (originForWrite)
	}
	j.addLocked(&persistence.Event{
		Stream: sid, ConnectionID: j.conn, At: time.Now().UTC(), Turn: turn, Kind: kind, Body: mustJSON(data),
	})
}

// maxRunBody bounds the body of an event holding a run of frames.
const maxRunBody = 256 << 10

// joinLocked appends frame as one more line of the last pending event when
// that event is a run of session/update frames we sent in the same stream
// and turn: a streamed reply is ~200 such frames, and one row instead of
// 200 is most of what the frame log costs a turn. The bytes and their order
// are kept.
func (j *Log) joinLocked(stream string, turn int64, frame []byte) bool {
	n := len(j.pending)
	if n == 0 {
		return false
	}
	last := j.pending[n-1]
	if !joinsRun(last) || last.Stream != stream || last.Turn != turn || len(last.Body)+1+len(frame) > maxRunBody {
		return false
	}
	last.Body = append(append(last.Body, '\n'), frame...)
	return true
}

func (j *Log) addLocked(ev *persistence.Event) {
	if st := j.sessions[ev.Stream]; st != nil && st.load != nil {
		j.finishLoadLocked(ev.Stream, st) // keeps the stream's order
	}
	if joinsRun(ev) && j.joinLocked(ev.Stream, ev.Turn, ev.Body) {
		return
	}
	j.pending = append(j.pending, ev)
	if len(j.pending) >= maxBatch {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
}

// maxRunHold bounds how long the writer's timer holds back an open
// streamed run (from its first frame): frames the agent sends without
// saving anything (tool call updates, a plan) still reach the log within
// it.
const maxRunHold = 2 * time.Second

// openRunLocked reports whether the writer's timer holds ev, the last
// pending event, back: a run of session/update frames of a running turn
// that the next frame of the stream may still join, younger than
// maxRunHold. A streamed reply then costs one event per save of the reply
// (the store wrapper commits what is pending with every projection write,
// this run included), not one per FlushInterval: at a real provider's pace
// of a chunk every few milliseconds a 20 ms timer cut a reply into one
// event of a few frames each, each row, index entry and packing header
// costing more than the text it held. The run is committed anyway as soon
// as anything is queued after it (it is then no longer last, and a
// response still commits everything before it is written), when it is
// full (the next frame starts a new event: it is never more than
// maxRunBody), by Flush and Close, or once maxRunHold has passed.
func (j *Log) openRunLocked(ev *persistence.Event, now time.Time) bool {
	if !joinsRun(ev) || now.Sub(ev.At) >= maxRunHold {
		return false
	}
	st := j.sessions[ev.Stream]
	return st != nil && st.active != 0 && st.active == ev.Turn
}

// joinsRun reports whether ev may share an event with the session/update
// frames sent before it: an outbound session/update of a session.
func joinsRun(ev *persistence.Event) bool {
	return ev.Direction == persistence.DirOut && ev.Kind == persistence.EventNotification &&
		ev.Method == "session/update" && ev.Stream != ev.ConnectionID
}

// absorbUpdate takes an outbound session/update of session sid without a
// new event, under one lock (the hot path of a streamed reply): the load
// of sid just answered takes it, or a load's replay counts it, or it joins
// the pending run of the session's running turn.
func (j *Log) absorbUpdate(sid string, frame []byte) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.sessions[sid]
	switch {
	case st == nil:
		return false
	case st.load != nil && st.load.bytes+len(frame) <= maxOpenLoad:
		st.load.frames = append(st.load.frames, loadFrame{persistence.DirOut, bytes.Clone(frame)})
		st.load.bytes += len(frame)
		return true
	case st.load != nil:
		j.finishLoadLocked(sid, st)
		return false
	case st.replay != nil:
		st.replay.add(frame)
		return true
	}
	return j.joinLocked(sid, st.active, frame)
}

// finishLoadLocked queues the session_loaded event of sid's open load, if
// any: its record, and its frames as differences from the last load's.
func (j *Log) finishLoadLocked(sid string, st *sessionState) {
	l := st.load
	if l == nil {
		return
	}
	st.load = nil
	sent := sentRecord{Frames: len(l.frames), CRC32C: loadSum(l.frames), Data: encodeLoad(l.frames, st.lastLoad)}
	if st.lastLoad != nil {
		sent.Base = loadSum(st.lastLoad)
	}
	st.lastLoad = l.frames
	l.record["sent"] = sent
	j.addLocked(&persistence.Event{
		Stream: sid, ConnectionID: j.conn, At: l.at, Kind: persistence.EventSessionLoaded, Body: mustJSON(l.record),
	})
}

// startQueuedReplay starts the replay of the next session/load read while
// an earlier one was replaying or open, once neither is. It is called when
// the agent records the earlier load (after the updates that follow its
// response) or when that load failed: a load recorded early (a write came
// first) still sends those updates, which are not the next one's replay.
func startQueuedReplay(st *sessionState) {
	if st.replayNext > 0 && st.replay == nil && st.load == nil {
		st.replay = &replayTally{}
		st.replayNext--
	}
}

// finishStaleLoadsLocked records the loads that waited openLoadGrace for
// the agent's record.
func (j *Log) finishStaleLoadsLocked(now time.Time) {
	for sid, st := range j.sessions {
		if st.load != nil && now.Sub(st.load.at) >= openLoadGrace {
			j.finishLoadLocked(sid, st)
		}
	}
}

// originForWrite is the origin of a write to session sid (the connection,
// the session's running turn) with the pending frames, which it takes.
// Before them, sid's open load is recorded, and so is the request of a
// load still running (a load may repair what a dead writer left), as a
// frame event of its own (that load is then recorded frame by frame).
func (j *Log) originForWrite(sid string) persistence.Origin {
	j.mu.Lock()
	defer j.mu.Unlock()
	o := persistence.Origin{ConnectionID: j.conn}
	if st := j.sessions[sid]; st != nil {
		j.finishLoadLocked(sid, st)
		for id, r := range j.requests {
			if r.load && r.session == sid && r.held != nil {
				j.releaseLoadLocked(id, r)
			}
		}
		o.Turn = st.active
	}
	o.Pending, j.pending = j.pending, nil
	return o
}

// releaseLoadLocked records the held request r of a load now, as a frame
// event of its own: that load is then recorded frame by frame, as loads
// were before.
func (j *Log) releaseLoadLocked(key string, r request) {
	j.addLocked(r.held)
	r.held, r.load = nil, false
	j.requests[key] = r
}
