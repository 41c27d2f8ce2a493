package sqlcore

import (
	"context"
	"errors"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// SetPermissionRule inserts or replaces the rule for (Cwd, Key).
func (s *Store) SetPermissionRule(ctx context.Context, r *persistence.PermissionRule) error {
	if r == nil || r.Cwd == "" || r.Key == "" {
		return s.errorf("set permission rule", errors.New("cwd and key are required"))
	}
	created := s.orNow(r.CreatedAt, s.now())
	c, err := s.d.Time(created)
	if err == nil {
		err = s.write(ctx, func(tx conn) error {
			_, err := tx.Exec(ctx, `
				INSERT INTO permission_rules (cwd, key, allow, created_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (cwd, key) DO UPDATE SET allow = excluded.allow, created_at = excluded.created_at`,
				s.d.Text(r.Cwd), s.d.Text(r.Key), r.Allow, c)
			return err
		})
	}
	if err != nil {
		return s.errorf("set permission rule", err)
	}
	r.CreatedAt = created
	return nil
}

// PermissionRules returns the rules of one project, ordered by key.
func (s *Store) PermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error) {
	rows, err := s.read().Query(ctx,
		`SELECT cwd, key, allow, created_at FROM permission_rules WHERE cwd = ? ORDER BY key`, cwd)
	out, err := collect(rows, err, func(row Row) (persistence.PermissionRule, error) {
		var r persistence.PermissionRule
		err := row.Scan(&r.Cwd, &r.Key, &r.Allow, s.d.ScanTime(&r.CreatedAt))
		r.CreatedAt = r.CreatedAt.UTC()
		return r, err
	})
	if err != nil {
		return nil, s.errorf("permission rules", err)
	}
	return out, nil
}

// ModelWindow returns the cached window of (endpoint, model).
func (s *Store) ModelWindow(ctx context.Context, endpoint, model string) (persistence.ModelWindow, error) {
	w := persistence.ModelWindow{Endpoint: endpoint, Model: model}
	err := s.read().QueryRow(ctx,
		`SELECT tokens, source, updated_at FROM model_windows WHERE endpoint = ? AND model = ?`, endpoint, model).
		Scan(&w.Tokens, &w.Source, s.d.ScanTime(&w.UpdatedAt))
	if s.d.IsNoRows(err) {
		return w, s.errorf("model window", persistence.ErrNotFound)
	}
	if err != nil {
		return w, s.errorf("model window", err)
	}
	w.UpdatedAt = w.UpdatedAt.UTC()
	return w, nil
}

// SetModelWindow inserts or replaces the window of (Endpoint, Model).
func (s *Store) SetModelWindow(ctx context.Context, w *persistence.ModelWindow) error {
	if w == nil || w.Endpoint == "" || w.Model == "" || w.Tokens <= 0 {
		return s.errorf("set model window", errors.New("endpoint, model and a positive window are required"))
	}
	at := s.orNow(w.UpdatedAt, s.now())
	n, err := s.d.Time(at)
	if err == nil {
		err = s.write(ctx, func(tx conn) error {
			_, err := tx.Exec(ctx, `
				INSERT INTO model_windows (endpoint, model, tokens, source, updated_at) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (endpoint, model) DO UPDATE SET tokens = excluded.tokens, source = excluded.source,
					updated_at = excluded.updated_at`,
				s.d.Text(w.Endpoint), s.d.Text(w.Model), w.Tokens, persistence.ValidText(w.Source), n)
			return err
		})
	}
	if err != nil {
		return s.errorf("set model window", err)
	}
	w.UpdatedAt = at
	return nil
}

// DeleteModelWindows forgets the cached windows of endpoint and model; ""
// matches any.
func (s *Store) DeleteModelWindows(ctx context.Context, endpoint, model string) (int, error) {
	var n int64
	err := s.write(ctx, func(tx conn) error {
		var err error
		n, err = tx.Exec(ctx, `DELETE FROM model_windows WHERE (? = '' OR endpoint = ?) AND (? = '' OR model = ?)`,
			s.d.Text(endpoint), s.d.Text(endpoint), s.d.Text(model), s.d.Text(model))
		return err
	})
	if err != nil {
		return 0, s.errorf("forget model windows", err)
	}
	return int(n), nil
}
