package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/secret"
)

// sessionMeta is what the agent keeps in persistence.Session.Metadata.
type sessionMeta struct {
	McpServers            []acp.McpServer `json:"mcpServers,omitempty"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitempty"`
	// Model is the session's model ("model" config option); "" = default.
	Model string `json:"model,omitempty"`
	// Cost is the session's cumulative model cost by currency.
	Cost map[string]float64 `json:"cost,omitempty"`
	// Used is the context the last model request used (tokens), shown
	// again when the session is reopened.
	Used int `json:"used,omitempty"`
	// Mode is the session mode (see mode.go); "" = ModeDefault.
	Mode string `json:"mode,omitempty"`
	// SystemPrompt is the client's systemPrompt (sysprompt.go); nil: none.
	SystemPrompt *clientPrompt `json:"systemPrompt,omitempty"`
	// Instructions are the nested instruction files already loaded into
	// the session (paths relative to the repository root).
	Instructions []string `json:"instructions,omitempty"`
	// ForkedFrom: the session this one was forked from (fork.go).
	ForkedFrom *forkOrigin `json:"forkedFrom,omitempty"`
	// Subagent names the subagent parent of a child session (subagent.go).
	Subagent *subagentLink `json:"subagent,omitempty"`
	// TitleByUser: the title was set by the user (session/set_title,
	// `sessions rename`); generated titles never replace it (archive.go).
	TitleByUser bool `json:"titleByUser,omitempty"`
	// Archived hides the session from listings unless asked (archive.go).
	Archived bool `json:"archived,omitempty"`
}

func decodeMeta(raw json.RawMessage) sessionMeta {
	var m sessionMeta
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // metadata is ours; a bad blob is an empty one
	}
	return m
}

// encodeMeta is m as stored, without a cost JSON cannot hold (finiteCosts);
// nil if it does not encode, which updateMeta refuses to store.
func encodeMeta(m sessionMeta) json.RawMessage {
	m.Cost = request.FiniteCosts(m.Cost)
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// workspaceRoots are the directories the session may work in: its cwd and
// the additionalDirectories the client named. Paths inside any of them
// count as inside the workspace.
func workspaceRoots(s *persistence.Session) []string {
	return append([]string{s.Cwd}, decodeMeta(s.Metadata).AdditionalDirectories...)
}

// updateMeta changes a session's metadata with fn and stores it. Writers in
// this process are serialised so that concurrent changes (a config option
// set while a turn records its cost) do not overwrite each other. s, when
// non-nil, receives the stored session. A change that changes nothing
// (a load in the same directory with the same MCP servers, the model set
// again) writes nothing: no updated_at bump, and on PostgreSQL no dead row
// version a load.
func (a *Agent) updateMeta(ctx context.Context, sess *session, fn func(s *persistence.Session, m *sessionMeta)) (*persistence.Session, error) {
	sess.meta.Lock()
	defer sess.meta.Unlock()
	s, err := a.store.GetSession(ctx, sess.id)
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
	if err := a.writes(sess).UpdateSession(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewSession creates a session, persisted before it is announced.
func (a *Agent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	sp, err := parseClientPrompt(req.SystemPrompt)
	if err != nil {
		return nil, err
	}
	meta := sessionMeta{
		McpServers:            maskServers(req.McpServers),
		AdditionalDirectories: req.AdditionalDirectories,
		Model:                 a.cfg.Model,
		Mode:                  ModeFromConfig(a.cfg.DefaultMode),
		SystemPrompt:          sp,
	}
	s := &persistence.Session{ID: newID("sess_"), Cwd: req.Cwd, Metadata: encodeMeta(meta)}
	if err := a.store.CreateSession(ctx, s); err != nil {
		return nil, storeError("create session", err)
	}
	sess := a.session(s.ID)
	sess.markOpened()
	a.log.Info("session created", zap.String("session", s.ID), zap.String("cwd", s.Cwd))
	a.connectMCP(sess, req.McpServers) // in the background: session/new stays fast
	a.afterOpen(ctx, sess, s)
	return &acp.NewSessionResponse{SessionID: s.ID, Modes: modeState(meta.Mode), ConfigOptions: a.configOptions(meta)}, nil
}

// LoadSession replays the whole stored conversation as session/update
// notifications and only then answers, as the protocol requires.
func (a *Agent) LoadSession(ctx context.Context, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	sp, err := parseClientPrompt(req.SystemPrompt)
	if err != nil {
		return nil, err
	}
	sess, s, err := a.reopen(ctx, req.SessionID, req.Cwd, req.McpServers, req.AdditionalDirectories, sp)
	if err != nil {
		return nil, err
	}
	a.connectMCP(sess, req.McpServers) // in the background: load stays fast
	seed := sess.cache.Ticket(sess.holdsLease())
	msgs, err := a.store.Messages(ctx, s.ID, persistence.MessageFilter{})
	if err != nil {
		return nil, storeError("load session", err)
	}
	if err := a.replay(ctx, s.ID, msgs); err != nil {
		return nil, err
	}
	// The compaction check counts with the model's tokenizer (whose
	// vocabulary may still have to be built) and may compact: the client
	// does not wait for it. It runs right after the response, before the
	// next message is handled, on the messages just replayed.
	acp.AfterResponse(ctx, func() { a.compactOnLoad(context.WithoutCancel(ctx), sess, s, msgs, seed) })
	a.log.Info("session loaded", zap.String("session", s.ID), zap.Int("messages", len(msgs)))
	a.afterOpen(ctx, sess, s)
	// What the replay showed, for the frame log's one event about the
	// load (the replayed frames are not logged again), once the updates
	// after the response are sent: the frame log keeps them in that event.
	loaded := map[string]any{"messages": len(msgs)}
	if len(msgs) > 0 {
		loaded["firstSeq"], loaded["lastSeq"] = msgs[0].Seq, msgs[len(msgs)-1].Seq
	}
	acp.AfterResponse(ctx, func() { a.record(ctx, s.ID, persistence.EventSessionLoaded, loaded) })
	meta := decodeMeta(s.Metadata)
	return &acp.LoadSessionResponse{Modes: modeState(meta.Mode), ConfigOptions: a.configOptions(meta)}, nil
}

// reopen finds a stored session for load or resume and records the root
// directories and MCP servers the client names afresh, and its
// systemPrompt when it sends one (none: the stored one stays).
//
// It first repairs what a dead writer left, under the session's lease for
// a moment; if a turn of another live process holds it, that turn is
// writing and nothing needs repair. If the database cannot be written, the
// session still opens: replaying only reads, and a prompt will say why it
// cannot run.
func (a *Agent) reopen(ctx context.Context, id, cwd string, mcp []acp.McpServer, dirs []string, sp *clientPrompt) (*session, *persistence.Session, error) {
	notFound := func() error { return unknownSession(id) }
	sess := a.session(id)
	if err := a.repairIfAbandoned(ctx, sess); err != nil {
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			return nil, nil, notFound()
		case storageFault(err):
			a.log.Warn("session opened read-only", zap.String("session", id), zap.Error(err))
		default:
			return nil, nil, storeError("open session", err)
		}
	}
	s, err := a.updateMeta(ctx, sess, func(s *persistence.Session, m *sessionMeta) {
		s.Cwd = cwd
		m.McpServers = maskServers(mcp)
		m.AdditionalDirectories = dirs
		if sp != nil {
			m.SystemPrompt = sp
		}
	})
	if storageFault(err) {
		a.log.Warn("open session: cannot save its new cwd", zap.String("session", id), zap.Error(err))
		s, err = a.store.GetSession(ctx, id)
	}
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil, notFound()
	}
	if err != nil {
		return nil, nil, storeError("open session", err)
	}
	sess.markOpened()
	return sess, s, nil
}

// repairIfAbandoned takes the session's lease for a moment when its last
// holder did not release it (a crash, a lost lease): taking it over marks
// the replies that holder left streaming interrupted. A lease released as
// a turn ended, or none, leaves nothing to repair, so a load then writes
// nothing for it (two transactions fewer, and on PostgreSQL no dead row a
// load); a live holder elsewhere is left alone (its turn repairs).
func (a *Agent) repairIfAbandoned(ctx context.Context, sess *session) error {
	l, err := a.store.GetLease(ctx, sess.id)
	switch {
	case err == nil && l.Owner == "":
		sess.cache.Released(l.Generation)
		return nil
	case errors.Is(err, persistence.ErrNotFound):
		sess.cache.Released(0)
		return nil
	}
	return a.leases.briefly(ctx, sess, func(context.Context) {})
}

// storageFault reports whether err is a full or read-only database.
func storageFault(err error) bool {
	return errors.Is(err, persistence.ErrStorageFull) || errors.Is(err, persistence.ErrStorageReadOnly)
}

// afterOpen sends what a client needs once it knows the session (after the
// new/load/resume response): the slash commands that really work here, and
// for a session that has talked to the model, its last context usage, so
// that a reopened session's context meter is right before the next prompt.
func (a *Agent) afterOpen(ctx context.Context, sess *session, s *persistence.Session) {
	cmds := a.availableCommands()
	usage := a.lastUsage(s)
	acp.AfterResponse(ctx, func() {
		a.announceInstructions(ctx, sess, s)
		a.sendUpdate(ctx, sess, acp.SessionUpdate{
			AvailableCommandsUpdate: &acp.AvailableCommandsUpdate{AvailableCommands: cmds},
		})
		if usage != nil {
			a.sendUpdate(ctx, sess, acp.SessionUpdate{UsageUpdate: usage})
		}
	})
}

// maskServers is servers as stored with the session: env values and header
// values are credentials, kept in memory for connecting but never stored.
func maskServers(servers []acp.McpServer) []acp.McpServer {
	out := make([]acp.McpServer, len(servers))
	for i, srv := range servers {
		srv.Env = slices.Clone(srv.Env)
		for j := range srv.Env {
			if srv.Env[j].Value != "" {
				srv.Env[j].Value = secret.Mask
			}
		}
		srv.Headers = slices.Clone(srv.Headers)
		for j := range srv.Headers {
			if srv.Headers[j].Value != "" {
				srv.Headers[j].Value = secret.Mask
			}
		}
		out[i] = srv
	}
	return out
}

// addCost adds amount to the session's cost in currency, rounded to a
// billionth (float sums would otherwise show 0.0061600000000000005), and
// returns the new total. A sum that is not a finite amount of 0 or more (a
// NaN price, a price so large the sum overflows) leaves the total as it
// was: JSON holds no NaN or infinity, and metadata that does not encode
// would lose the session's mode with it.
func (m *sessionMeta) addCost(currency string, amount float64) float64 {
	old := m.Cost[currency]
	sum := old + amount
	if r := math.Round(sum*1e9) / 1e9; request.FiniteAmount(r) {
		sum = r
	}
	if !request.FiniteAmount(sum) {
		return old
	}
	if m.Cost == nil {
		m.Cost = make(map[string]float64)
	}
	m.Cost[currency] = sum
	return sum
}
