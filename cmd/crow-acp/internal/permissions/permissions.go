// Package permissions is `crow-acp permissions`: it lists the stored
// "always allow" and "always reject" rules and revokes them. The store is
// read on every permission decision (nothing keeps rules in memory), so a
// revoked rule no longer applies to the next tool call of a running session.
package permissions

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Summary is the command's line in `crow-acp --help`.
const Summary = `list or revoke the stored "always allow" and "always reject" permission rules`

// Usage is `crow-acp permissions --help`.
const Usage = `Usage:
  crow-acp permissions list [--cwd DIR] [--json]
  crow-acp permissions revoke ID... | --all [--cwd DIR]

Shows and takes back the "Always allow" and "Always reject" answers given to
permission questions. Each rule belongs to a workspace (the session's working
directory) and covers a kind of tool call ("edit"), a program ("command:go"),
a path outside the workspace ("path:/etc/hosts") or an MCP tool ("mcp:...").
list prints every rule with its ID, of every workspace unless --cwd; revoke
removes the rules named by ID (all of them or, if one ID is unknown, none:
exit status 2), or every rule (of DIR with --cwd) with --all, and prints
what it removed. Running sessions read the rules on every permission
decision: their next tool call asks again.
`

// Env is what the command needs from package main.
type Env struct {
	Out, Err io.Writer
	Getenv   func(string) string
	// Parse parses fs's flags, wherever they are among args, and returns
	// the other arguments (main's parseArgs: --help prints fs.Usage).
	Parse func(fs *flag.FlagSet, args []string) ([]string, error)
}

// Run runs `crow-acp permissions` with args (after "permissions").
func Run(ctx context.Context, e Env, args []string) error {
	if len(args) == 0 {
		return config.Usagef("permissions: missing subcommand: list or revoke (see crow-acp permissions --help)")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(e.Out, Usage)
		return nil
	case "list", "ls":
		return list(ctx, e, args[1:])
	case "revoke", "rm":
		return revoke(ctx, e, args[1:])
	}
	return config.Usagef("permissions: unknown subcommand %q: use list or revoke", args[0])
}

// options are the flags of both subcommands.
type options struct {
	cwd  string
	json bool
	all  bool
}

func parse(e Env, name, synopsis string, args []string, define func(fs *flag.FlagSet, o *options)) ([]string, *options, *config.Settings, error) {
	var o options
	fs := flag.NewFlagSet("permissions "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), synopsis+"\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.cwd, "cwd", "", "only the rules of the workspace DIR")
	define(fs, &o)
	cf := config.AddFlags(fs, config.FlagsStore)
	pos, err := e.Parse(fs, args)
	if err != nil {
		return nil, nil, nil, err
	}
	if o.cwd != "" {
		// Sessions keep their directory as the editor sent it: absolute.
		if o.cwd, err = filepath.Abs(o.cwd); err != nil {
			return nil, nil, nil, config.Usagef("permissions %s: --cwd: %v", name, err)
		}
	}
	cfg, err := config.LoadStore(cf, e.Getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	return pos, &o, cfg, nil
}

func list(ctx context.Context, e Env, args []string) error {
	pos, o, cfg, err := parse(e, "list", "Usage: crow-acp permissions list [--cwd DIR] [--json]\n\nLists the stored permission rules by ID, of every workspace unless --cwd.\n", args,
		func(fs *flag.FlagSet, o *options) {
			fs.BoolVar(&o.json, "json", false, "print JSON lines, one rule each")
		})
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return config.Usagef("permissions list: unexpected argument %q", pos[0])
	}
	store, ok, err := sessions.OpenExisting(ctx, cfg)
	if err != nil {
		return err
	}
	if !ok {
		if !o.json {
			fmt.Fprintf(e.Err, "no permission rules (%s does not exist)\n", backend.Describe(cfg.DB.V))
		}
		return nil
	}
	defer store.Close()
	rules, err := store.ListPermissionRules(ctx, o.cwd)
	if err != nil {
		return err
	}
	if o.json {
		return WriteJSON(e.Out, rules)
	}
	if len(rules) == 0 {
		fmt.Fprintf(e.Err, "no permission rules%s in %s\n", in(o.cwd), backend.Describe(cfg.DB.V))
		return nil
	}
	return WriteTable(e.Out, rules)
}

func revoke(ctx context.Context, e Env, args []string) error {
	pos, o, cfg, err := parse(e, "revoke", "Usage: crow-acp permissions revoke ID... | --all [--cwd DIR]\n\nRemoves the rules named by ID (crow-acp permissions list shows them), or every rule with --all\n(of DIR only with --cwd), and prints what it removed.\n", args,
		func(fs *flag.FlagSet, o *options) {
			fs.BoolVar(&o.all, "all", false, "revoke every rule (of DIR with --cwd)")
		})
	if err != nil {
		return err
	}
	ids, err := parseIDs(pos)
	switch {
	case err != nil:
		return err
	case o.all && len(ids) > 0:
		return config.Usagef("permissions revoke: give rule IDs or --all, not both")
	case !o.all && len(ids) == 0:
		return config.Usagef("permissions revoke: missing rule ID or --all (crow-acp permissions list shows the IDs)")
	}
	store, ok, err := sessions.OpenExisting(ctx, cfg)
	if err != nil {
		return err
	}
	if !ok {
		if o.all {
			fmt.Fprintf(e.Err, "no permission rules to revoke (%s does not exist)\n", backend.Describe(cfg.DB.V))
			return nil
		}
		return unknown(&persistence.UnknownRulesError{IDs: ids}, o.cwd)
	}
	defer store.Close()
	var gone []persistence.PermissionRule
	if o.all {
		gone, err = store.ClearPermissionRules(ctx, o.cwd)
	} else {
		gone, err = store.DeletePermissionRules(ctx, o.cwd, ids)
	}
	var u *persistence.UnknownRulesError
	if errors.As(err, &u) {
		return unknown(u, o.cwd)
	}
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		fmt.Fprintf(e.Err, "no permission rules%s to revoke\n", in(o.cwd))
		return nil
	}
	noun := "rules"
	if len(gone) == 1 {
		noun = "rule"
	}
	fmt.Fprintf(e.Out, "Revoked %d permission %s:\n", len(gone), noun)
	return WriteTable(e.Out, gone)
}

// unknown is a usage error (exit status 2): nothing was revoked.
func unknown(u *persistence.UnknownRulesError, cwd string) error {
	return config.Usagef("permissions revoke: %v%s; nothing was revoked (crow-acp permissions list shows the IDs)", u, in(cwd))
}

func in(cwd string) string {
	if cwd == "" {
		return ""
	}
	return " in " + termsafe.Line(cwd)
}

func parseIDs(args []string) ([]int64, error) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseInt(strings.TrimPrefix(a, "#"), 10, 64)
		if err != nil || id <= 0 {
			return nil, config.Usagef("permissions revoke: %q is not a rule ID (a positive number: crow-acp permissions list shows them)", termsafe.Line(a))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// WriteTable writes rules as a table, one line each. Every stored text is
// shown through termsafe: a rule's key can come from a model's command.
func WriteTable(w io.Writer, rules []persistence.PermissionRule) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDECISION\tCOVERS\tWORKSPACE\tGRANTED\tIN SESSION")
	for _, r := range rules {
		granted := "unknown"
		if !r.CreatedAt.IsZero() {
			granted = transcript.LocalTime(r.CreatedAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, Decision(r.Allow), termsafe.Line(transcript.OneLine(r.Key, 80)),
			termsafe.Line(r.Cwd), granted, orUnknown(termsafe.Line(r.SessionID)))
	}
	return tw.Flush()
}

// Rule is a rule as `permissions list --json` prints it.
type Rule struct {
	ID        int64      `json:"id"`
	Decision  string     `json:"decision"` // "allow" or "reject"
	Key       string     `json:"key"`
	Cwd       string     `json:"cwd"`
	GrantedAt *time.Time `json:"grantedAt"` // null: unknown
	SessionID string     `json:"sessionId"` // "": unknown
}

// WriteJSON writes rules as JSON lines, one rule each, safe for a terminal.
func WriteJSON(w io.Writer, rules []persistence.PermissionRule) error {
	var b strings.Builder
	for _, r := range rules {
		j := Rule{ID: r.ID, Decision: Decision(r.Allow), Key: r.Key, Cwd: r.Cwd, SessionID: r.SessionID}
		if !r.CreatedAt.IsZero() {
			at := r.CreatedAt.UTC()
			j.GrantedAt = &at
		}
		line, err := json.Marshal(j)
		if err != nil {
			return err
		}
		b.Write(termsafe.JSON(line))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Decision is "allow" or "reject".
func Decision(allow bool) string {
	if allow {
		return "allow"
	}
	return "reject"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
