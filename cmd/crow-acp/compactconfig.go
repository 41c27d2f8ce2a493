package main

import (
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/compaction"
)

// compactionExtra holds the finer compaction settings, from the
// environment only; the common ones (auto, threshold, keep_recent) are in
// the config file's [compaction] section too.
type compactionExtra struct {
	target             value[float64]
	keepTurns          value[int]
	pruneProtectTurns  value[int]
	pruneProtectTokens value[int]
	pruneMinimum       value[int]
	protectedTools     []string
}

// resolveCompaction reads CROW_AUTO_COMPACT and the finer CROW_* compaction
// variables; defaults are compaction.Defaults().
func (c *config) resolveCompaction(r resolver) error {
	if v := r.getenv("CROW_AUTO_COMPACT"); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return usagef("CROW_AUTO_COMPACT=%q: want true or false", v)
		}
		c.compactAuto = value[bool]{V: b, From: source{kind: "env", detail: "CROW_AUTO_COMPACT"}}
	}
	if v := r.getenv("CROW_COMPACT_KEEP_RECENT"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return usagef("CROW_COMPACT_KEEP_RECENT=%q: want a non-negative integer", v)
		}
		c.compactKeepRecent = value[int]{V: n, From: source{kind: "env", detail: "CROW_COMPACT_KEEP_RECENT"}}
	}
	d := compaction.Defaults()
	var err error
	x := &c.compactExtra
	if x.target, err = r.float("", "CROW_COMPACT_TARGET", nil, "", min(d.Target, c.compactThreshold.V*2/3)); err != nil {
		return err
	}
	for _, v := range []struct {
		env string
		dst *value[int]
		def int
	}{
		{"CROW_COMPACT_KEEP_TURNS", &x.keepTurns, d.KeepTurns},
		{"CROW_PRUNE_PROTECT_TURNS", &x.pruneProtectTurns, d.PruneProtectTurns},
		{"CROW_PRUNE_PROTECT_TOKENS", &x.pruneProtectTokens, d.PruneProtectTokens},
		{"CROW_PRUNE_MINIMUM", &x.pruneMinimum, d.PruneMinimum},
	} {
		if *v.dst, err = r.int("", v.env, nil, "", v.def); err != nil {
			return err
		}
		if v.dst.V < 0 {
			return usagef("%s=%d must not be negative", v.env, v.dst.V)
		}
	}
	for _, name := range strings.Split(r.getenv("CROW_PRUNE_PROTECTED_TOOLS"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			x.protectedTools = append(x.protectedTools, name)
		}
	}
	if err := c.compactionSettings().Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// compactionSettings are the agent's compaction thresholds; the window and
// output reserve come from each model.
func (c *config) compactionSettings() *compaction.Settings {
	s := compaction.Defaults()
	x := c.compactExtra
	s.Auto, s.Threshold, s.ManualKeep = c.compactAuto.V, c.compactThreshold.V, c.compactKeepRecent.V
	s.Target, s.KeepTurns = x.target.V, x.keepTurns.V
	s.PruneProtectTurns, s.PruneProtectTokens, s.PruneMinimum = x.pruneProtectTurns.V, x.pruneProtectTokens.V, x.pruneMinimum.V
	s.ProtectedTools = x.protectedTools
	return &s
}
