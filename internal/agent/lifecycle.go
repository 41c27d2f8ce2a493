package agent

import (
	"context"
	"errors"
	"slices"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/secret"
	"go.uber.org/zap"
)

// lifecycle opens, reopens, forks, replays, closes and deletes sessions.
type lifecycle struct {
	*core
	undo *undoer
	// commands lists the slash commands that work here (the Agent's
	// commands.go), announced when a session opens.
	commands func() []acp.AvailableCommand
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
func (l *lifecycle) reopen(ctx context.Context, id, cwd string, mcp []acp.McpServer, dirs []string, sp *clientPrompt) (*session, *persistence.Session, error) {
	notFound := func() error { return unknownSession(id) }
	sess := l.sessions.get(id)
	if err := l.repairIfAbandoned(ctx, sess); err != nil {
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			return nil, nil, notFound()
		case storageFault(err):
			l.log.Warn("session opened read-only", zap.String("session", id), zap.Error(err))
		default:
			return nil, nil, storeError("open session", err)
		}
	}
	s, err := l.updateMeta(ctx, sess, func(s *persistence.Session, m *sessionMeta) {
		s.Cwd = cwd
		m.McpServers = maskServers(mcp)
		m.AdditionalDirectories = dirs
		if sp != nil {
			m.SystemPrompt = sp
		}
	})
	if storageFault(err) {
		l.log.Warn("open session: cannot save its new cwd", zap.String("session", id), zap.Error(err))
		s, err = l.store.GetSession(ctx, id)
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
func (l *lifecycle) repairIfAbandoned(ctx context.Context, sess *session) error {
	lease, err := l.store.GetLease(ctx, sess.id)
	switch {
	case err == nil && lease.Owner == "":
		sess.req.Cache.Released(lease.Generation)
		return nil
	case errors.Is(err, persistence.ErrNotFound):
		sess.req.Cache.Released(0)
		return nil
	}
	// A crash may also have left an undo unfinished: reported once the
	// session is open (afterOpen).
	return l.leases.briefly(ctx, sess, func(ctx context.Context) { l.undo.takePendingUndos(ctx, sess) })
}

// storageFault reports whether err is a full or read-only database.
func storageFault(err error) bool {
	return errors.Is(err, persistence.ErrStorageFull) || errors.Is(err, persistence.ErrStorageReadOnly)
}

// afterOpen sends what a client needs once it knows the session (after the
// new/load/resume response): the slash commands that really work here, and
// for a session that has talked to the model, its last context usage, so
// that a reopened session's context meter is right before the next prompt.
func (l *lifecycle) afterOpen(ctx context.Context, sess *session, s *persistence.Session) {
	cmds := l.commands()
	usage := l.build.LastUsage(s)
	acp.AfterResponse(ctx, func() {
		l.build.AnnounceInstructions(ctx, &sess.req, s)
		l.undo.sendPendingUndos(ctx, sess)
		l.sendUpdate(ctx, sess, acp.SessionUpdate{
			AvailableCommandsUpdate: &acp.AvailableCommandsUpdate{AvailableCommands: cmds},
		})
		if usage != nil {
			l.sendUpdate(ctx, sess, acp.SessionUpdate{UsageUpdate: usage})
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
