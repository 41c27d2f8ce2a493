package sqlcore

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// ruleColumns are what scanRule reads, in its order.
const ruleColumns = `id, cwd, key, allow, created_at, session_id`

func (s *Store) scanRule(row Row) (persistence.PermissionRule, error) {
	var r persistence.PermissionRule
	err := row.Scan(&r.ID, &r.Cwd, &r.Key, &r.Allow, s.d.ScanTime(&r.CreatedAt), &r.SessionID)
	r.CreatedAt = r.CreatedAt.UTC()
	return r, err
}

// SetPermissionRule inserts or replaces the rule for (Cwd, Key); a
// replaced rule keeps its id.
func (s *Store) SetPermissionRule(ctx context.Context, r *persistence.PermissionRule) error {
	if r == nil || r.Cwd == "" || r.Key == "" {
		return s.errorf("set permission rule", errors.New("cwd and key are required"))
	}
	created := s.orNow(r.CreatedAt, s.now())
	c, err := s.d.Time(created)
	var id int64
	if err == nil {
		err = s.write(ctx, func(tx conn) error {
			return tx.QueryRow(ctx, `
				INSERT INTO permission_rules (cwd, key, allow, created_at, session_id) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (cwd, key) DO UPDATE SET allow = excluded.allow, created_at = excluded.created_at,
					session_id = excluded.session_id
				RETURNING id`,
				s.d.Text(r.Cwd), s.d.Text(r.Key), r.Allow, c, s.d.Text(r.SessionID)).Scan(&id)
		})
	}
	if err != nil {
		return s.errorf("set permission rule", err)
	}
	r.ID, r.CreatedAt = id, created
	return nil
}

// PermissionRules returns the rules of one project, ordered by key.
func (s *Store) PermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error) {
	rows, err := s.read().Query(ctx,
		`SELECT `+ruleColumns+` FROM permission_rules WHERE cwd = ? ORDER BY key`, cwd)
	out, err := collect(rows, err, s.scanRule)
	if err != nil {
		return nil, s.errorf("permission rules", err)
	}
	return out, nil
}

// ListPermissionRules returns the rules of every project, or of cwd, by id.
func (s *Store) ListPermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error) {
	rows, err := s.read().Query(ctx,
		`SELECT `+ruleColumns+` FROM permission_rules WHERE (? = '' OR cwd = ?) ORDER BY id`, cwd, cwd)
	out, err := collect(rows, err, s.scanRule)
	if err != nil {
		return nil, s.errorf("list permission rules", err)
	}
	return out, nil
}

// DeletePermissionRules deletes the rules ids (of cwd, when not ""), all or
// none, and returns them by id.
func (s *Store) DeletePermissionRules(ctx context.Context, cwd string, ids []int64) ([]persistence.PermissionRule, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return nil, s.errorf("delete permission rules", errors.New("no rule ids given"))
	}
	var out []persistence.PermissionRule
	err := s.write(ctx, func(tx conn) error {
		rows, err := tx.Query(ctx, `DELETE FROM permission_rules WHERE {in_ids} AND (? = '' OR cwd = ?)
			RETURNING `+ruleColumns, s.d.IDs(ids), cwd, cwd)
		if out, err = collect(rows, err, s.scanRule); err != nil {
			return err
		}
		if len(out) < len(ids) {
			// The transaction rolls back: nothing is deleted.
			return &persistence.UnknownRulesError{IDs: slices.DeleteFunc(ids, func(id int64) bool {
				return slices.ContainsFunc(out, func(r persistence.PermissionRule) bool { return r.ID == id })
			})}
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf("delete permission rules", err)
	}
	sortRules(out)
	return out, nil
}

// ClearPermissionRules deletes every rule (of cwd, when not "") and
// returns them by id.
func (s *Store) ClearPermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error) {
	var out []persistence.PermissionRule
	err := s.write(ctx, func(tx conn) error {
		rows, err := tx.Query(ctx, `DELETE FROM permission_rules WHERE (? = '' OR cwd = ?) RETURNING `+ruleColumns, cwd, cwd)
		out, err = collect(rows, err, s.scanRule)
		return err
	})
	if err != nil {
		return nil, s.errorf("clear permission rules", err)
	}
	sortRules(out)
	return out, nil
}

// sortRules orders rules by id: RETURNING promises no order.
func sortRules(rs []persistence.PermissionRule) {
	slices.SortFunc(rs, func(a, b persistence.PermissionRule) int { return cmp.Compare(a.ID, b.ID) })
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
