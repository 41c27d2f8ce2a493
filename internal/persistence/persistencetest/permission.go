package persistencetest

import (
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

func testPermissionRules(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	if rules, err := s.PermissionRules(ctx, "/p"); err != nil || len(rules) != 0 {
		t.Fatalf("PermissionRules on empty store = %v, %v; want none", rules, err)
	}
	set := func(cwd, key string, allow bool) {
		t.Helper()
		r := &persistence.PermissionRule{Cwd: cwd, Key: key, Allow: allow}
		if err := s.SetPermissionRule(ctx, r); err != nil {
			t.Fatalf("SetPermissionRule(%s, %s): %v", cwd, key, err)
		}
		if r.CreatedAt.IsZero() {
			t.Fatalf("SetPermissionRule did not set CreatedAt")
		}
	}
	set("/p", "edit", true)
	set("/p", "command:rm", false)
	set("/q", "edit", false)
	set("/p", "edit", false) // replaces

	rules, err := s.PermissionRules(ctx, "/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Key != "command:rm" || rules[0].Allow ||
		rules[1].Key != "edit" || rules[1].Allow || rules[1].Cwd != "/p" {
		t.Fatalf("PermissionRules(/p) = %+v; want command:rm=reject, edit=reject", rules)
	}
	if rules, _ := s.PermissionRules(ctx, "/q"); len(rules) != 1 || rules[0].Allow {
		t.Fatalf("rules of another project changed: %+v", rules)
	}
	if err := s.SetPermissionRule(ctx, &persistence.PermissionRule{Cwd: "", Key: "x"}); err == nil {
		t.Fatal("SetPermissionRule without cwd succeeded")
	}
}
