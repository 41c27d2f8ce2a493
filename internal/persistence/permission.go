package persistence

import (
	"context"
	"time"
)

// PermissionRule is a standing "always allow" or "always reject" decision
// the user made for one project. Key names what the rule covers; the agent
// owns its format (for example "edit", "command:go", "path:/etc/hosts").
type PermissionRule struct {
	Cwd       string // the project: the session's working directory
	Key       string
	Allow     bool // false: always reject
	CreatedAt time.Time
}

// PermissionStore keeps permission rules per project. They outlive sessions
// and restarts; deleting a session does not delete them.
type PermissionStore interface {
	// SetPermissionRule inserts r, or replaces the rule with the same Cwd and
	// Key. CreatedAt is set when zero.
	SetPermissionRule(ctx context.Context, r *PermissionRule) error
	// PermissionRules returns the rules of one project, ordered by Key.
	PermissionRules(ctx context.Context, cwd string) ([]PermissionRule, error)
}
