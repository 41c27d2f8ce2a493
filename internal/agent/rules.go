package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// permissionsCommand is /permissions: the "always" rules of the session's
// project, and revoking them (crow-acp permissions does the same from a
// shell).
var permissionsCommand = slashCommand{
	name:        "permissions",
	description: "List this project's \"always allow/reject\" rules; /permissions revoke ID... or revoke all deletes them",
	hint:        "[revoke ID...|all]",
	run: func(ctx context.Context, a *Agent, sess *session, s *persistence.Session, input string) (acp.StopReason, error) {
		args := strings.Fields(input)
		if len(args) == 0 {
			rules, err := a.store.ListPermissionRules(ctx, s.Cwd)
			if err != nil {
				return "", storeError("list permission rules", err)
			}
			if len(rules) == 0 {
				return a.reply(ctx, sess, "[No \"always\" rules for this project.]\n")
			}
			return a.reply(ctx, sess, "Permission rules of this project (/permissions revoke ID... or all):\n\n"+rulesTable(rules))
		}
		if args[0] != "revoke" || len(args) == 1 {
			return a.reply(ctx, sess, "[Usage: /permissions, or /permissions revoke ID... | all.]\n")
		}
		var gone []persistence.PermissionRule
		var err error
		if len(args) == 2 && args[1] == "all" {
			gone, err = a.store.ClearPermissionRules(ctx, s.Cwd)
		} else {
			ids := make([]int64, 0, len(args)-1)
			for _, f := range args[1:] {
				id, perr := strconv.ParseInt(f, 10, 64)
				if perr != nil || id < 1 {
					return a.reply(ctx, sess, fmt.Sprintf("[%s is not a rule ID: /permissions lists them.]\n", markdownLine(f)))
				}
				ids = append(ids, id)
			}
			gone, err = a.store.DeletePermissionRules(ctx, s.Cwd, ids)
		}
		var unknown *persistence.UnknownRulesError
		if errors.As(err, &unknown) {
			return a.reply(ctx, sess, "["+unknown.Error()+" in this project; nothing was revoked.]\n")
		}
		if err != nil {
			return "", storeError("revoke permission rules", err)
		}
		if len(gone) == 0 {
			return a.reply(ctx, sess, "[No \"always\" rules for this project: nothing to revoke.]\n")
		}
		return a.reply(ctx, sess, fmt.Sprintf("Revoked %d rule(s); crow-acp asks again for these:\n\n%s", len(gone), rulesTable(gone)))
	},
}

// rulesTable is rules as a Markdown table. Keys hold commands and paths
// from the model's calls: escaped so that they stay text in one cell.
func rulesTable(rules []persistence.PermissionRule) string {
	var b strings.Builder
	b.WriteString("| ID | decision | what | granted |\n| --- | --- | --- | --- |\n")
	for _, r := range rules {
		decision := "always allow"
		if !r.Allow {
			decision = "always reject"
		}
		granted := r.CreatedAt.UTC().Format("2006-01-02 15:04")
		if r.SessionID != "" {
			granted += " in session " + markdownLine(r.SessionID)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", r.ID, decision, markdownLine(r.Key), granted)
	}
	return b.String()
}
