package storecopy

import (
	"context"
	"fmt"
	"slices"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// copyRules copies every permission rule ("always allow", "always reject")
// of src, project by project, also of projects without sessions. A rule
// the destination already has with the same decision is kept as it is; one
// with the other decision is a conflict and is not overwritten. A copied
// rule keeps when and in which session it was granted; the destination
// gives it its own ID. It returns
// how many rules the source has there, and the conflicts as "cwd: key".
func copyRules(ctx context.Context, dst Destination, src Source) (int, []string, error) {
	all, err := src.ListPermissionRules(ctx, "")
	if err != nil {
		return 0, nil, fmt.Errorf("list the source's permission rules: %w", err)
	}
	var cwds []string
	for _, r := range all {
		cwds = append(cwds, r.Cwd)
	}
	slices.Sort(cwds)
	cwds = slices.Compact(cwds)
	n := 0
	var conflicts []string
	for _, cwd := range cwds {
		want, err := src.PermissionRules(ctx, cwd)
		if err != nil {
			return n, conflicts, fmt.Errorf("read the source's permission rules of %s: %w", cwd, err)
		}
		have, err := dst.PermissionRules(ctx, cwd)
		if err != nil {
			return n, conflicts, fmt.Errorf("read the destination's permission rules of %s: %w", cwd, err)
		}
		for _, r := range want {
			i := slices.IndexFunc(have, func(h persistence.PermissionRule) bool { return h.Key == r.Key })
			switch {
			case i >= 0 && have[i].Allow != r.Allow:
				conflicts = append(conflicts, cwd+": "+r.Key)
			case i < 0:
				if err := dst.SetPermissionRule(ctx, &r); err != nil {
					return n, conflicts, fmt.Errorf("write permission rule %s of %s: %w", r.Key, cwd, err)
				}
			}
			n++
		}
		// Read back: every source rule is there with its decision.
		if have, err = dst.PermissionRules(ctx, cwd); err != nil {
			return n, conflicts, fmt.Errorf("read back the permission rules of %s: %w", cwd, err)
		}
		for _, r := range want {
			i := slices.IndexFunc(have, func(h persistence.PermissionRule) bool { return h.Key == r.Key })
			if i < 0 || (have[i].Allow != r.Allow && !slices.Contains(conflicts, cwd+": "+r.Key)) {
				return n, conflicts, fmt.Errorf("verification failed: permission rule %s of %s did not read back", r.Key, cwd)
			}
		}
	}
	return n, conflicts, nil
}
