package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/persistence"
)

var _ persistence.PermissionStore = (*Store)(nil)

// SetPermissionRule inserts or replaces the rule for (Cwd, Key).
func (s *Store) SetPermissionRule(ctx context.Context, r *persistence.PermissionRule) error {
	if r == nil || r.Cwd == "" || r.Key == "" {
		return errors.New("sqlite: set permission rule: cwd and key are required")
	}
	created := r.CreatedAt
	if created.IsZero() {
		created = now()
	}
	c, err := nanos(created)
	if err != nil {
		return fmt.Errorf("sqlite: set permission rule: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO permission_rules (cwd, key, allow, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (cwd, key) DO UPDATE SET allow = excluded.allow, created_at = excluded.created_at`,
			r.Cwd, r.Key, r.Allow, c)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: set permission rule: %w", err)
	}
	r.CreatedAt = created
	return nil
}

// PermissionRules returns the rules of one project, ordered by key.
func (s *Store) PermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error) {
	rows, err := s.rdb.QueryContext(ctx,
		`SELECT cwd, key, allow, created_at FROM permission_rules WHERE cwd = ? ORDER BY key`, cwd)
	if err != nil {
		return nil, fmt.Errorf("sqlite: permission rules: %w", err)
	}
	defer rows.Close()
	var out []persistence.PermissionRule
	for rows.Next() {
		var (
			r persistence.PermissionRule
			c int64
		)
		if err := rows.Scan(&r.Cwd, &r.Key, &r.Allow, &c); err != nil {
			return nil, fmt.Errorf("sqlite: permission rules: %w", err)
		}
		r.CreatedAt = fromNanos(c)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: permission rules: %w", err)
	}
	return out, nil
}

// DeletePermissionRule removes one rule; unknown rules are not an error.
func (s *Store) DeletePermissionRule(ctx context.Context, cwd, key string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM permission_rules WHERE cwd = ? AND key = ?`, cwd, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete permission rule: %w", err)
	}
	return nil
}
