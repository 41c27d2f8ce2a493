package permissions

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// cli runs `permissions args...` on the SQLite database db (flags first:
// main's parser, which takes them anywhere, is tested through the binary).
func cli(t *testing.T, db string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"CROW_DB": db, "HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir()}
	e := Env{Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] },
		Parse: func(fs *flag.FlagSet, args []string) ([]string, error) {
			if err := fs.Parse(args); err != nil {
				return nil, config.Usagef("%v", err)
			}
			return fs.Args(), nil
		}}
	err = Run(t.Context(), e, args)
	return out.String(), errb.String(), err
}

// seed stores rules in a new database and returns its path and the rules.
func seed(t *testing.T, rules ...persistence.PermissionRule) (string, []persistence.PermissionRule) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "crow.db")
	s, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range rules {
		if err := s.SetPermissionRule(t.Context(), &rules[i]); err != nil {
			t.Fatal(err)
		}
	}
	return db, rules
}

func isUsage(err error) bool {
	var ce *config.Error
	return errors.As(err, &ce)
}

var granted = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestListShowsEveryRuleSanitised(t *testing.T) {
	db, rules := seed(t,
		persistence.PermissionRule{Cwd: "/w/a", Key: "command:go", Allow: true, SessionID: "sess_1", CreatedAt: granted},
		// A key made from a model's command line, with an escape sequence
		// that would clear the screen and a bidi override.
		persistence.PermissionRule{Cwd: "/w/b", Key: "command:evil\x1b[2J\u202e", Allow: false, CreatedAt: granted},
	)
	out, _, err := cli(t, db, "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("list printed:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[0] != strconv.FormatInt(rules[0].ID, 10) || f[1] != "allow" || f[2] != "command:go" || f[3] != "/w/a" || f[len(f)-1] != "sess_1" {
		t.Errorf("first row: %q", lines[1])
	}
	if strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(lines[2], "command:evil^[[2J<U+202E>") ||
		!strings.Contains(lines[2], "reject") || !strings.HasSuffix(lines[2], "unknown") {
		t.Errorf("second row not sanitised or session not unknown: %q", lines[2])
	}

	out, _, err = cli(t, db, "list", "--cwd", "/w/b", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got Rule
	if err := json.Unmarshal([]byte(out), &got); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("--json printed %q (%v); want one JSON line", out, err)
	}
	if got.ID != rules[1].ID || got.Decision != "reject" || got.Key != rules[1].Key || got.Cwd != "/w/b" ||
		got.GrantedAt == nil || !got.GrantedAt.Equal(granted) || got.SessionID != "" {
		t.Errorf("--json rule = %+v", got)
	}
	if strings.ContainsRune(out, '\x1b') || strings.ContainsRune(out, '\u202e') {
		t.Errorf("--json output carries raw control characters: %q", out)
	}
}

func TestRevokeSaysWhatItRemoved(t *testing.T) {
	db, rules := seed(t,
		persistence.PermissionRule{Cwd: "/w/a", Key: "edit", Allow: true, SessionID: "sess_1", CreatedAt: granted},
		persistence.PermissionRule{Cwd: "/w/a", Key: "command:rm", Allow: false, CreatedAt: granted},
		persistence.PermissionRule{Cwd: "/w/b", Key: "edit", Allow: true, CreatedAt: granted},
	)
	rm, other := strconv.FormatInt(rules[1].ID, 10), strconv.FormatInt(rules[0].ID, 10)
	out, _, err := cli(t, db, "revoke", rm)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "Revoked 1 permission rule:\n") || !strings.Contains(out, "command:rm") || strings.Contains(out, "edit") {
		t.Errorf("revoke %s printed:\n%s", rm, out)
	}

	// Unknown ids are a usage error (exit 2) and nothing is revoked, not
	// even the ids that exist; an id of another workspace is unknown there.
	for _, args := range [][]string{{"revoke", other, "99"}, {"revoke", "--cwd", "/w/b", other}, {"revoke", rm}} {
		if _, _, err := cli(t, db, args...); !isUsage(err) || !strings.Contains(err.Error(), "nothing was revoked") {
			t.Errorf("%q: %v; want a usage error saying nothing was revoked", args, err)
		}
	}
	if out, _, _ := cli(t, db, "list"); strings.Count(out, "\n") != 3 {
		t.Fatalf("after failed revokes:\n%s", out)
	}
	for _, args := range [][]string{{"revoke"}, {"revoke", "--all", "1"}, {"revoke", "x"}, {"revoke", "0"}, {"frobnicate"}, {}} {
		if _, _, err := cli(t, db, args...); !isUsage(err) {
			t.Errorf("%q: %v; want a usage error", args, err)
		}
	}

	out, _, err = cli(t, db, "revoke", "--all", "--cwd", "/w/b")
	if err != nil || !strings.HasPrefix(out, "Revoked 1 permission rule:\n") || !strings.Contains(out, "/w/b") || strings.Contains(out, "/w/a") {
		t.Fatalf("revoke --all --cwd /w/b: %v\n%s", err, out)
	}
	out, _, err = cli(t, db, "revoke", "--all")
	if err != nil || !strings.HasPrefix(out, "Revoked 1 permission rule:\n") || !strings.Contains(out, "sess_1") {
		t.Fatalf("revoke --all: %v\n%s", err, out)
	}
	if out, errOut, err := cli(t, db, "list"); err != nil || out != "" || !strings.Contains(errOut, "no permission rules") {
		t.Errorf("list after revoking all: %q %q %v", out, errOut, err)
	}
	if _, errOut, err := cli(t, db, "revoke", "--all"); err != nil || !strings.Contains(errOut, "no permission rules to revoke") {
		t.Errorf("revoke --all with nothing left: %q %v", errOut, err)
	}
}

// A database that does not exist is not created: it has no rules.
func TestNoDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "missing.db")
	if out, errOut, err := cli(t, db, "list"); err != nil || out != "" || !strings.Contains(errOut, "does not exist") {
		t.Errorf("list: %q %q %v", out, errOut, err)
	}
	if _, _, err := cli(t, db, "revoke", "3"); !isUsage(err) {
		t.Errorf("revoke 3: %v; want a usage error", err)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database was created: %v", err)
	}
}
