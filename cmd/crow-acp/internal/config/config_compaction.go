package config

import (
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/internal/compaction"
)

// resolveCompaction applies env > file > compaction.Defaults().
func (c *Settings) resolveCompaction(r resolver, f compactionFile) error {
	d := compaction.Defaults()
	x := &c.compact
	x.auto = Value[bool]{V: deref(f.Auto, d.Auto), From: fromDefault}
	if f.Auto != nil {
		x.auto.From = r.fileAt("compaction.auto")
	}
	if v := r.getenv("CROW_AUTO_COMPACT"); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return Usagef("CROW_AUTO_COMPACT=%q: want true or false", v)
		}
		x.auto = Value[bool]{V: b, From: Source{Kind: "env", Detail: "CROW_AUTO_COMPACT"}}
	}
	var err error
	if x.threshold, err = r.float("", "CROW_COMPACT_THRESHOLD", f.Threshold, "compaction.threshold", d.Threshold); err != nil {
		return err
	}
	// The target stays below the threshold unless set.
	if x.target, err = r.float("", "CROW_COMPACT_TARGET", f.Target, "compaction.target", min(d.Target, x.threshold.V*2/3)); err != nil {
		return err
	}
	for _, v := range []struct {
		env, key string
		file     *int
		dst      *Value[int]
		def      int
	}{
		{"CROW_COMPACT_KEEP_RECENT", "compaction.keep_recent", f.KeepRecent, &x.keepRecent, d.ManualKeep},
		{"CROW_COMPACT_KEEP_TURNS", "compaction.keep_turns", f.KeepTurns, &x.keepTurns, d.KeepTurns},
		{"CROW_PRUNE_PROTECT_TURNS", "compaction.prune_protect_turns", f.PruneProtectTurns, &x.pruneProtectTurns, d.PruneProtectTurns},
		{"CROW_PRUNE_PROTECT_TOKENS", "compaction.prune_protect_tokens", f.PruneProtectTokens, &x.pruneProtectTokens, d.PruneProtectTokens},
		{"CROW_PRUNE_MINIMUM", "compaction.prune_minimum", f.PruneMinimum, &x.pruneMinimum, d.PruneMinimum},
	} {
		if *v.dst, err = r.int("", v.env, v.file, v.key, v.def); err != nil {
			return err
		}
		if v.dst.V < 0 {
			return Usagef("%s = %d must not be negative (from %s)", v.key, v.dst.V, v.dst.From)
		}
	}
	x.protectedTools = Value[[]string]{V: d.ProtectedTools, From: fromDefault}
	if f.ProtectedTools != nil {
		x.protectedTools = Value[[]string]{V: f.ProtectedTools, From: r.fileAt("compaction.protected_tools")}
	}
	if env := r.getenv("CROW_PRUNE_PROTECTED_TOOLS"); env != "" {
		var names []string
		for _, name := range strings.Split(env, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, name)
			}
		}
		x.protectedTools = Value[[]string]{V: names, From: Source{Kind: "env", Detail: "CROW_PRUNE_PROTECTED_TOOLS"}}
	}
	if err := c.compactionSettings().Validate(); err != nil {
		return Usagef("%v", err)
	}
	return nil
}

// compactionSettings are the agent's compaction thresholds; the window and
// output reserve come from each model.
func (c *Settings) compactionSettings() *compaction.Settings {
	s := compaction.Defaults()
	x := c.compact
	s.Auto, s.Threshold, s.Target, s.ManualKeep = x.auto.V, x.threshold.V, x.target.V, x.keepRecent.V
	s.KeepTurns = x.keepTurns.V
	s.PruneProtectTurns, s.PruneProtectTokens, s.PruneMinimum = x.pruneProtectTurns.V, x.pruneProtectTokens.V, x.pruneMinimum.V
	s.ProtectedTools = x.protectedTools.V
	return &s
}

// compactionRows are the settings `config show` lists.
func (c *Settings) compactionRows() []Row {
	x := c.compact
	f := func(v Value[float64]) string { return strconv.FormatFloat(v.V, 'g', -1, 64) }
	n := func(v Value[int]) string { return strconv.Itoa(v.V) }
	tools := strings.Join(x.protectedTools.V, ", ")
	if tools == "" {
		tools = "(none)"
	}
	return []Row{
		{"compaction.auto", strconv.FormatBool(x.auto.V), x.auto.From},
		{"compaction.threshold", f(x.threshold), x.threshold.From},
		{"compaction.target", f(x.target), x.target.From},
		{"compaction.keep_recent", n(x.keepRecent), x.keepRecent.From},
		{"compaction.keep_turns", n(x.keepTurns), x.keepTurns.From},
		{"compaction.prune_protect_turns", n(x.pruneProtectTurns), x.pruneProtectTurns.From},
		{"compaction.prune_protect_tokens", n(x.pruneProtectTokens), x.pruneProtectTokens.From},
		{"compaction.prune_minimum", n(x.pruneMinimum), x.pruneMinimum.From},
		{"compaction.protected_tools", tools, x.protectedTools.From},
	}
}
