package agent

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// The agent's rooms, from the bottom up; each imports only those below it:
//
//   - core (this file): what every room shares: the client, the store, the
//     models, the request builder (package request; host.go is what it asks
//     of the agent), the sessions this process keeps and the few acts all
//     of them need (send an update, write fenced by the lease, change the
//     stored metadata, call the model under the retry policy).
//   - signIn (auth.go, logout.go): how the user signs in to the endpoint.
//   - undoer (undo.go): what a turn's tools change, and /undo, /redo.
//   - turns (turns.go, turn.go, tools.go, subagent.go, task.go,
//     permission.go, ask.go, title.go, unfinished.go, ...): one prompt turn,
//     its tool calls and subagents.
//   - lifecycle (lifecycle.go, fork.go, replay.go, compact_replay.go,
//     empty.go, archive.go, configoptions.go): sessions opened, reopened,
//     forked, replayed, closed and deleted.
//   - Agent (agent.go; its ACP methods in connection.go, sessions.go,
//     prompt.go, commands.go, ext.go): each method hands its work to a room.
//
// Each room embeds core for what all share and holds the rooms below it it
// calls; a room never calls one above it (a call up is a function a higher
// room hands down: turns.slash, turns.subagent, lifecycle.commands, and the
// builder's host.tools).
type core struct {
	client acp.Client
	store  Store
	model  provider.Client
	cfg    Config
	log    *zap.Logger
	leases *leases
	// closed is closed by Close: what a session still retries in the
	// background stops (unfinished.go).
	closed    chan struct{}
	closeOnce sync.Once

	// build builds each model request (package request); it asks the
	// agent what it needs through host.go.
	build      *request.Builder
	mu         sync.Mutex
	clientCaps acp.ClientCapabilities
	sessions   sessionTable // what this process keeps per session, by id (session.go)

	models   *request.Models // the models, their endpoints and context windows
	children chan struct{}   // one token per running subagent (subagent.go)
}

// journaling reports whether the frames sent are kept in the event log.
func (c *core) framesLogged() bool {
	return c.cfg.FrameLog != nil && c.cfg.FrameLog.Recording()
}

// record sends a lifecycle event to the frame log, if there is one.
func (c *core) record(ctx context.Context, sessionID string, kind persistence.EventKind, data any) {
	if c.cfg.FrameLog != nil {
		c.cfg.FrameLog.Record(ctx, sessionID, kind, data)
	}
}

// writes is the store the session's writes go to: while this process holds
// (or held and lost, until it releases) the session's lease, every write is
// fenced by it, so that once the lease is lost the store refuses them. The
// fence is passed explicitly, like the frame log's origin, never in a context.
func (c *core) writes(sess *session) Store {
	sess.mu.Lock()
	h := sess.lease
	sess.mu.Unlock()
	if h == nil {
		return c.store
	}
	return c.store.WithFence(h.fence)
}

// sendUpdate sends u to the client, unless the session's turn was muted
// (its prompt is answered).
func (c *core) sendUpdate(ctx context.Context, sess *session, u acp.SessionUpdate) {
	c.deliver(ctx, sess, u)
}

// deliver is sendUpdate, reporting whether the update was sent.
func (c *core) deliver(ctx context.Context, sess *session, u acp.SessionUpdate) bool {
	if sess.turnMuted() {
		return false
	}
	if err := c.client.SessionUpdate(ctx, &acp.SessionNotification{SessionID: sess.id, Update: u}); err != nil {
		c.log.Debug("session/update not delivered", zap.String("session", sess.id), zap.Error(err))
		return false
	}
	return true
}

func (c *core) capabilities() acp.ClientCapabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientCaps
}

// updateMeta changes a session's metadata with fn and stores it. Writers in
// this process are serialised so that concurrent changes (a config option
// set while a turn records its cost) do not overwrite each other. s, when
// non-nil, receives the stored session. A change that changes nothing
// (a load in the same directory with the same MCP servers, the model set
// again) writes nothing: no updated_at bump, and on PostgreSQL no dead row
// version a load.
func (c *core) updateMeta(ctx context.Context, sess *session, fn func(s *persistence.Session, m *sessionMeta)) (*persistence.Session, error) {
	sess.meta.Lock()
	defer sess.meta.Unlock()
	s, err := c.store.GetSession(ctx, sess.id)
	if err != nil {
		return nil, err
	}
	was := *s
	m := decodeMeta(s.Metadata)
	fn(s, &m)
	if s.Metadata = encodeMeta(m); s.Metadata == nil {
		// Stored, it would be an empty blob: the mode, cost and
		// everything else of the session gone.
		return nil, errors.New("session metadata does not encode")
	}
	if s.Cwd == was.Cwd && s.Title == was.Title && bytes.Equal(s.Metadata, was.Metadata) {
		return s, nil
	}
	if err := c.writes(sess).UpdateSession(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// metaError maps a store error about session id: unknown ids are -32002
// with the id in data, as the protocol asks.
func (c *core) metaError(op, id string, err error) error {
	if errors.Is(err, persistence.ErrNotFound) {
		return &acp.Error{Code: acp.CodeResourceNotFound, Message: unknownSession(id).Error(), Data: map[string]string{"sessionId": id}}
	}
	return storeError(op, err)
}

// sessionModel is the model a session uses now.
func (c *core) sessionModel(s *persistence.Session) request.Model {
	return c.models.Named(decodeMeta(s.Metadata).Model)
}

// sessionMode is the session's current mode, read from the store so that a
// session/set_mode during a turn applies to the very next tool call.
func (c *core) sessionMode(ctx context.Context, sessionID string) string {
	s, err := c.store.GetSession(context.WithoutCancel(ctx), sessionID)
	if err != nil {
		return ModeDefault
	}
	return currentMode(decodeMeta(s.Metadata))
}

// streamWithRetry is the model's Stream under the retry policy. onEvent
// sees the events of the attempt that is finally returned and of failed
// attempts that produced none the client could see. A nil onEvent is a
// request whose reply the client never sees (a summary, a title): it is
// retried whatever arrived before the failure.
func (c *core) streamWithRetry(ctx context.Context, client provider.Client, sessionID string, req provider.Request, onEvent func(provider.Event) error) (*provider.Result, retryState, error) {
	p := c.cfg.Retry.withDefaults()
	var st retryState
	for {
		st.attempts++
		res, err := client.Stream(ctx, req, func(ev provider.Event) error {
			if onEvent == nil {
				return nil
			}
			switch ev.Kind {
			case provider.EventText, provider.EventReasoning, provider.EventToolCallDelta:
				st.forwarded = true
			}
			return onEvent(ev)
		})
		if err == nil || ctx.Err() != nil || st.forwarded {
			return res, st, err
		}
		d, ok := p.delay(st.attempts, err)
		if !ok {
			return res, st, err
		}
		c.log.Warn("model request failed; retrying", zap.String("session", sessionID),
			zap.Int("attempt", st.attempts), zap.Duration("wait", d), zap.Error(err))
		if serr := p.Sleep(ctx, d); serr != nil {
			return res, st, err
		}
	}
}

// extSession loads the session named in params.
func (c *core) extSession(ctx context.Context, id string) (*persistence.Session, error) {
	if id == "" {
		return nil, acp.MissingParam("sessionId", "pass the id that session/new or session/load returned")
	}
	s, err := c.store.GetSession(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, unknownSession(id)
	}
	if err != nil {
		return nil, storeError("session", err)
	}
	return s, nil
}

// deleteStored deletes the stored session; state this process still keeps
// for it (a prompt that raced the delete) drops its kept view.
func (c *core) deleteStored(ctx context.Context, sessionID string) error {
	del := func() error { return c.store.DeleteSession(ctx, sessionID) }
	if sess := c.sessions.kept(sessionID); sess != nil {
		return sess.req.Rewrite(del)
	}
	return del()
}
