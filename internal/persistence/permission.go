package persistence

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// PermissionRule is a standing "always allow" or "always reject" decision
// the user made for one project. Key names what the rule covers; the agent
// owns its format (for example "edit", "command:go", "path:/etc/hosts").
type PermissionRule struct {
	// ID is the store's number for the rule: set by SetPermissionRule,
	// kept when the rule is replaced (same Cwd and Key), never given to
	// another rule after it is deleted. Another store numbers it anew.
	ID        int64
	Cwd       string // the project: the session's working directory
	Key       string
	Allow     bool // false: always reject
	CreatedAt time.Time
	// SessionID is the session the rule was granted in; "" when unknown
	// (rules stored before migration 0010, or by a caller that did not say).
	SessionID string
}

// PermissionStore keeps permission rules per project. They outlive sessions
// and restarts; deleting a session does not delete them. Every call reads
// or writes the database: nothing is cached, so a rule deleted by another
// process is gone for the next call.
type PermissionStore interface {
	// SetPermissionRule inserts r, or replaces the decision, time and
	// session of the rule with the same Cwd and Key (its ID stays).
	// CreatedAt is set when zero; r.ID is set to the rule's ID.
	SetPermissionRule(ctx context.Context, r *PermissionRule) error
	// PermissionRules returns the rules of one project, ordered by Key.
	PermissionRules(ctx context.Context, cwd string) ([]PermissionRule, error)
	// ListPermissionRules returns the rules of every project, or of cwd
	// when it is not "", ordered by ID.
	ListPermissionRules(ctx context.Context, cwd string) ([]PermissionRule, error)
	// DeletePermissionRules deletes the rules with the given IDs (of cwd
	// when it is not "") and returns them, ordered by ID. It deletes all or
	// nothing: an ID that names no such rule is an error wrapping
	// ErrNotFound (see UnknownRulesError) and nothing is deleted.
	DeletePermissionRules(ctx context.Context, cwd string, ids []int64) ([]PermissionRule, error)
	// ClearPermissionRules deletes every rule, or every rule of cwd when it
	// is not "", and returns them, ordered by ID.
	ClearPermissionRules(ctx context.Context, cwd string) ([]PermissionRule, error)
}

// UnknownRulesError names the IDs DeletePermissionRules found no rule for.
type UnknownRulesError struct{ IDs []int64 }

func (e *UnknownRulesError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return "no permission rule with id " + strings.Join(ids, ", ")
}

func (e *UnknownRulesError) Unwrap() error { return ErrNotFound }
