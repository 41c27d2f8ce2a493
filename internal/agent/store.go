package agent

import (
	"context"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Store is what the agent needs of the session store: sessions, their
// messages and compactions, leases and permission rules. persistence.Store
// and the frame log's recording store satisfy it; nothing else of theirs
// (the event log, import, Close) is reachable from here.
type Store interface {
	SessionStore

	CreateSession(ctx context.Context, s *persistence.Session) error
	GetSession(ctx context.Context, id string) (*persistence.Session, error)
	UpdateSession(ctx context.Context, s *persistence.Session) error
	DeleteSession(ctx context.Context, id string) error

	AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error
	UpdateMessage(ctx context.Context, m *persistence.Message) error
	SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error

	Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error
	Compaction(ctx context.Context, sessionID string, id int64) (*persistence.Compaction, error)
	Compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error)
	ExpandCompaction(ctx context.Context, sessionID string, id int64) error
	CollapseCompaction(ctx context.Context, sessionID string, id int64) error
	DeleteCompaction(ctx context.Context, sessionID string, id int64) error

	PermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error)
	SetPermissionRule(ctx context.Context, r *persistence.PermissionRule) error
	ListPermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error)
	DeletePermissionRules(ctx context.Context, cwd string, ids []int64) ([]persistence.PermissionRule, error)
	ClearPermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error)

	LeaseStore
}

// SessionStore is what listing sessions needs (ListNonEmpty): pages of
// sessions and, to tell the empty ones, their messages.
type SessionStore interface {
	ListSessions(ctx context.Context, opts persistence.ListSessionsOptions) ([]persistence.Session, string, error)
	Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error)
}

// LeaseStore is what the session leases need (lease.go): the leases
// themselves and the repair of replies an abandoned holder left streaming.
type LeaseStore interface {
	AcquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error
	RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]string, error)
	ReleaseLease(ctx context.Context, sessionID, owner string) error
	GetLease(ctx context.Context, sessionID string) (*persistence.Lease, error)
	InterruptStreaming(ctx context.Context, sessionID string) (int, error)
	// WithFence is the store with every write fenced by f: the writes of
	// a lease's holder (persistence.Fence).
	WithFence(f persistence.Fence) persistence.Store
}

var _ Store = persistence.Store(nil)
