package storecopy

import (
	"context"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Source is what Copy reads of the store it copies from: its sessions,
// each one's history (persistence.Dump) and events, and the permission
// rules.
type Source interface {
	persistence.DumpSource
	ListSessions(ctx context.Context, opts persistence.ListSessionsOptions) ([]persistence.Session, string, error)
	Events(ctx context.Context, stream string, f persistence.EventFilter) ([]persistence.Event, error)
	PermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error)
	ListPermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error)
}

// Destination is what Copy writes into the store it copies to; it reads
// the copy back as a Source to verify it.
type Destination interface {
	Source
	persistence.Importer
	AppendEvents(ctx context.Context, evs ...*persistence.Event) error
	SetPermissionRule(ctx context.Context, r *persistence.PermissionRule) error
}
