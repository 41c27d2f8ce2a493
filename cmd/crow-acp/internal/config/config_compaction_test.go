package config

import (
	"flag"
	"strings"
	"testing"
)

// TestCompactionSettings: the compaction settings reach the agent exactly
// as configured, and impossible ones are refused with the setting named.
func TestCompactionSettings(t *testing.T) {
	load := func(env map[string]string) (*Settings, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		cf := AddFlags(fs, FlagsAll)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		env["HOME"] = t.TempDir()
		return Load(cf, func(k string) string { return env[k] })
	}
	cfg, err := load(map[string]string{"CROW_MODEL": "local", "CROW_CONTEXT_WINDOW": "6000", "CROW_OUTPUT_RESERVE": "1000",
		"CROW_COMPACT_THRESHOLD": "0.8", "CROW_AUTO_COMPACT": "false", "CROW_COMPACT_KEEP_RECENT": "4",
		"CROW_COMPACT_KEEP_TURNS": "3", "CROW_PRUNE_MINIMUM": "500", "CROW_PRUNE_PROTECTED_TOOLS": "todo, skill"})
	if err != nil {
		t.Fatal(err)
	}
	ac := cfg.Agent("test")
	s := ac.Compaction
	if s.Auto || s.Threshold != 0.8 || s.ManualKeep != 4 || s.KeepTurns != 3 || s.PruneMinimum != 500 ||
		strings.Join(s.ProtectedTools, ",") != "todo,skill" || s.Target > s.Threshold {
		t.Errorf("settings = %+v", *s)
	}
	if len(ac.Models) != 1 || ac.Models[0].ContextWindow != 6000 || ac.Models[0].OutputReserve != 1000 {
		t.Errorf("models = %+v", ac.Models)
	}
	for env, want := range map[string]string{
		"CROW_OUTPUT_RESERVE":    "output reserve 6000",
		"CROW_AUTO_COMPACT":      "CROW_AUTO_COMPACT",
		"CROW_COMPACT_TARGET":    "target",
		"CROW_PRUNE_MINIMUM":     "CROW_PRUNE_MINIMUM",
		"CROW_COMPACT_THRESHOLD": "threshold",
	} {
		vals := map[string]string{"CROW_OUTPUT_RESERVE": "6000", "CROW_AUTO_COMPACT": "maybe", "CROW_COMPACT_TARGET": "0.95",
			"CROW_PRUNE_MINIMUM": "-1", "CROW_COMPACT_THRESHOLD": "1.5"}
		_, err := load(map[string]string{"CROW_CONTEXT_WINDOW": "6000", env: vals[env]})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: error %v, want one naming %q", env, vals[env], err, want)
		}
	}
}
