package persistencetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

func testPermissionRules(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	if rules, err := s.PermissionRules(ctx, "/p"); err != nil || len(rules) != 0 {
		t.Fatalf("PermissionRules on empty store = %v, %v; want none", rules, err)
	}
	set := func(cwd, key string, allow bool, session string) *persistence.PermissionRule {
		t.Helper()
		r := &persistence.PermissionRule{Cwd: cwd, Key: key, Allow: allow, SessionID: session}
		if err := s.SetPermissionRule(ctx, r); err != nil {
			t.Fatalf("SetPermissionRule(%s, %s): %v", cwd, key, err)
		}
		if r.CreatedAt.IsZero() || r.ID <= 0 {
			t.Fatalf("SetPermissionRule did not set CreatedAt and ID: %+v", r)
		}
		return r
	}
	edit := set("/p", "edit", true, "sess_1")
	rm := set("/p", "command:rm", false, "")
	q := set("/q", "edit", false, "sess_2")
	again := set("/p", "edit", false, "sess_3") // replaces
	if again.ID != edit.ID || rm.ID == edit.ID || q.ID == edit.ID || q.ID == rm.ID {
		t.Fatalf("ids: edit %d, rm %d, q %d, replaced edit %d; want distinct ids, the replaced rule's kept", edit.ID, rm.ID, q.ID, again.ID)
	}

	rules, err := s.PermissionRules(ctx, "/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Key != "command:rm" || rules[0].Allow || rules[0].ID != rm.ID || rules[0].SessionID != "" ||
		rules[1].Key != "edit" || rules[1].Allow || rules[1].Cwd != "/p" || rules[1].ID != edit.ID || rules[1].SessionID != "sess_3" {
		t.Fatalf("PermissionRules(/p) = %+v; want command:rm=reject, edit=reject from sess_3", rules)
	}
	if rules, _ := s.PermissionRules(ctx, "/q"); len(rules) != 1 || rules[0].Allow || rules[0].SessionID != "sess_2" {
		t.Fatalf("rules of another project changed: %+v", rules)
	}
	if err := s.SetPermissionRule(ctx, &persistence.PermissionRule{Cwd: "", Key: "x"}); err == nil {
		t.Fatal("SetPermissionRule without cwd succeeded")
	}
}

// testRevokePermissionRules: rules are listed by id across projects and
// deleted by id (all or none) or all at once, and each delete returns
// exactly what it removed.
func testRevokePermissionRules(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ids []int64
	for i, r := range []persistence.PermissionRule{
		{Cwd: "/p", Key: "edit", Allow: true, SessionID: "sess_a", CreatedAt: at},
		{Cwd: "/q", Key: "command:go", Allow: true, SessionID: "sess_b", CreatedAt: at.Add(time.Minute)},
		{Cwd: "/p", Key: "path:/etc/hosts", Allow: false, CreatedAt: at.Add(2 * time.Minute)},
		{Cwd: "/q", Key: "edit", Allow: false, SessionID: "sess_b", CreatedAt: at.Add(3 * time.Minute)},
	} {
		must(t, s.SetPermissionRule(ctx, &r))
		if i > 0 && r.ID <= ids[i-1] {
			t.Fatalf("rule %d got id %d after %d; want increasing ids", i, r.ID, ids[i-1])
		}
		ids = append(ids, r.ID)
	}
	keys := func(rs []persistence.PermissionRule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Cwd+" "+r.Key)
		}
		return out
	}
	all, err := s.ListPermissionRules(ctx, "")
	if err != nil || !slices.Equal(keys(all), []string{"/p edit", "/q command:go", "/p path:/etc/hosts", "/q edit"}) {
		t.Fatalf("ListPermissionRules(all) = %q, %v; want the four rules by id", keys(all), err)
	}
	if all[0].ID != ids[0] || !all[0].CreatedAt.Equal(at) || all[0].SessionID != "sess_a" || !all[0].Allow || all[2].Allow {
		t.Errorf("first rule read back as %+v", all[0])
	}
	if p, err := s.ListPermissionRules(ctx, "/p"); err != nil || !slices.Equal(keys(p), []string{"/p edit", "/p path:/etc/hosts"}) {
		t.Fatalf("ListPermissionRules(/p) = %q, %v", keys(p), err)
	}

	// An id of another project, with the project named, is unknown, and
	// nothing is deleted, not even the id that exists.
	_, err = s.DeletePermissionRules(ctx, "/p", []int64{ids[0], ids[1]})
	var unknown *persistence.UnknownRulesError
	if !errors.Is(err, persistence.ErrNotFound) || !errors.As(err, &unknown) || !slices.Equal(unknown.IDs, []int64{ids[1]}) {
		t.Fatalf("DeletePermissionRules(/p, [%d %d]) = %v; want not found naming %d", ids[0], ids[1], err, ids[1])
	}
	if left, _ := s.ListPermissionRules(ctx, ""); len(left) != 4 {
		t.Fatalf("a failed delete removed rules: %q left", keys(left))
	}
	if _, err := s.DeletePermissionRules(ctx, "", nil); err == nil {
		t.Error("DeletePermissionRules with no ids succeeded")
	}

	gone, err := s.DeletePermissionRules(ctx, "", []int64{ids[3], ids[0], ids[3]})
	if err != nil || !slices.Equal(keys(gone), []string{"/p edit", "/q edit"}) || gone[0].SessionID != "sess_a" {
		t.Fatalf("DeletePermissionRules = %q, %v; want /p edit and /q edit", keys(gone), err)
	}
	if p, _ := s.PermissionRules(ctx, "/p"); !slices.Equal(keys(p), []string{"/p path:/etc/hosts"}) {
		t.Fatalf("after the delete /p has %q", keys(p))
	}
	// A new rule never takes a deleted rule's id.
	r := &persistence.PermissionRule{Cwd: "/p", Key: "edit", Allow: true}
	must(t, s.SetPermissionRule(ctx, r))
	if r.ID <= ids[3] {
		t.Errorf("a rule after a delete got id %d, not above the deleted %d", r.ID, ids[3])
	}

	gone, err = s.ClearPermissionRules(ctx, "/q")
	if err != nil || !slices.Equal(keys(gone), []string{"/q command:go"}) {
		t.Fatalf("ClearPermissionRules(/q) = %q, %v", keys(gone), err)
	}
	gone, err = s.ClearPermissionRules(ctx, "")
	if err != nil || !slices.Equal(keys(gone), []string{"/p path:/etc/hosts", "/p edit"}) {
		t.Fatalf("ClearPermissionRules(all) = %q, %v", keys(gone), err)
	}
	if left, err := s.ListPermissionRules(ctx, ""); err != nil || len(left) != 0 {
		t.Fatalf("after clearing: %q, %v", keys(left), err)
	}
	if gone, err := s.ClearPermissionRules(ctx, ""); err != nil || len(gone) != 0 {
		t.Fatalf("clearing nothing = %q, %v", keys(gone), err)
	}
}

// testTwoStoresRevoke: a rule revoked through one store is gone for the
// next read of another (as the CLI and a running server are): stores keep
// no rule in memory.
func testTwoStoresRevoke(t *testing.T, open func(t *testing.T) persistence.Store) {
	ctx := t.Context()
	server, cli := open(t), open(t)
	r := &persistence.PermissionRule{Cwd: "/w", Key: "command:make", Allow: true, SessionID: "sess_s"}
	must(t, server.SetPermissionRule(ctx, r))
	if rules, err := server.PermissionRules(ctx, "/w"); err != nil || len(rules) != 1 {
		t.Fatalf("server reads %+v, %v", rules, err)
	}
	listed, err := cli.ListPermissionRules(ctx, "/w")
	if err != nil || len(listed) != 1 || listed[0].ID != r.ID || listed[0].SessionID != "sess_s" {
		t.Fatalf("the other store lists %+v, %v; want the rule %d", listed, err, r.ID)
	}
	if _, err := cli.DeletePermissionRules(ctx, "/w", []int64{r.ID}); err != nil {
		t.Fatal(err)
	}
	if rules, err := server.PermissionRules(ctx, "/w"); err != nil || len(rules) != 0 {
		t.Fatalf("after the other store revoked it the server still reads %+v, %v", rules, err)
	}
}

// testMigratePermissionRules: rules stored before migration 0010 get ids
// and keep their decision and time; their session is unknown ("").
func testMigratePermissionRules(t *testing.T, b Backend) {
	db := b.at(t, 8)
	at := time.Date(2025, 11, 5, 9, 30, 0, 0, time.UTC)
	old := []persistence.PermissionRule{
		{Cwd: "/old", Key: "edit", Allow: true, CreatedAt: at},
		{Cwd: "/old", Key: "command:rm", Allow: false, CreatedAt: at.Add(time.Hour)},
		{Cwd: "/other", Key: "command:go", Allow: true, CreatedAt: at.Add(2 * time.Hour)},
	}
	for _, r := range old {
		db.mustExec(t, `INSERT INTO permission_rules (cwd, key, allow, created_at) VALUES (?, ?, ?, ?)`, r.Cwd, r.Key, r.Allow, b.V7.At(r.CreatedAt))
	}
	s := b.open(t)
	ctx := t.Context()
	got, err := s.ListPermissionRules(ctx, "")
	if err != nil || len(got) != len(old) {
		t.Fatalf("after the migration: %+v, %v; want %d rules", got, err, len(old))
	}
	seen := map[int64]bool{}
	for _, g := range got {
		i := slices.IndexFunc(old, func(o persistence.PermissionRule) bool { return o.Cwd == g.Cwd && o.Key == g.Key })
		if i < 0 || g.ID <= 0 || seen[g.ID] || g.Allow != old[i].Allow || !g.CreatedAt.Equal(old[i].CreatedAt) || g.SessionID != "" {
			t.Errorf("rule after the migration: %+v", g)
		}
		seen[g.ID] = true
	}
	r := &persistence.PermissionRule{Cwd: "/old", Key: "read", Allow: true, SessionID: "sess_new"}
	must(t, s.SetPermissionRule(ctx, r))
	for id := range seen {
		if r.ID <= id {
			t.Errorf("a new rule got id %d, not above the migrated %d", r.ID, id)
		}
	}
	if gone, err := s.DeletePermissionRules(ctx, "/old", []int64{got[0].ID}); err != nil || len(gone) != 1 {
		t.Errorf("revoking a migrated rule: %+v, %v", gone, err)
	}
}
