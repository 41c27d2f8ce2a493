package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/persistence"
)

var _ persistence.PermissionStore = (*Store)(nil)

// SetPermissionRule inserts or replaces the rule for (Cwd, Key).
func (s *Store) SetPermissionRule(ctx context.Context, r *persistence.PermissionRule) error {
	if r == nil || r.Cwd == "" || r.Key == "" {
		return errors.New("postgres: set permission rule: cwd and key are required")
	}
	created := stored(r.CreatedAt)
	if r.CreatedAt.IsZero() {
		created = now()
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO permission_rules (cwd, key, allow, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (cwd, key) DO UPDATE SET allow = excluded.allow, created_at = excluded.created_at`,
		r.Cwd, r.Key, r.Allow, created)
	if err != nil {
		return fmt.Errorf("postgres: set permission rule: %w", err)
	}
	r.CreatedAt = created
	return nil
}

// PermissionRules returns the rules of one project, ordered by key.
func (s *Store) PermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT cwd, key, allow, created_at FROM permission_rules WHERE cwd = $1 ORDER BY key`, cwd)
	if err != nil {
		return nil, fmt.Errorf("postgres: permission rules: %w", err)
	}
	defer rows.Close()
	var out []persistence.PermissionRule
	for rows.Next() {
		var r persistence.PermissionRule
		if err := rows.Scan(&r.Cwd, &r.Key, &r.Allow, &r.CreatedAt); err != nil {
			return nil, fmt.Errorf("postgres: permission rules: %w", err)
		}
		r.CreatedAt = r.CreatedAt.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: permission rules: %w", err)
	}
	return out, nil
}

// DeletePermissionRule removes one rule; unknown rules are not an error.
func (s *Store) DeletePermissionRule(ctx context.Context, cwd, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM permission_rules WHERE cwd = $1 AND key = $2`, cwd, key); err != nil {
		return fmt.Errorf("postgres: delete permission rule: %w", err)
	}
	return nil
}
