package tool

import (
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
)

// EnvPolicy decides the environment of the processes crow-acp starts for
// the model (run_command) and for MCP stdio servers: their output is stored
// and sent to the model, so they must not see crow-acp's secrets. It follows
// codex's shell_environment_policy: start from the inherited variables,
// drop the default and configured excludes, add Set, then keep only
// IncludeOnly when it is given.
type EnvPolicy struct {
	// Inherit is "all" (the default), "core" (HOME, PATH, USER, SHELL,
	// LANG, TMPDIR and the like) or "none".
	Inherit string
	// Exclude are extra name patterns to drop (glob, case-insensitive).
	Exclude []string
	// IncludeOnly, when not empty, keeps only names matching one of these
	// patterns (after Set).
	IncludeOnly []string
	// Set adds or replaces variables (user-given, so not filtered by
	// excludes).
	Set map[string]string
	// SecretNames are variables holding crow-acp's secrets (each
	// provider's api_key_env); they are always dropped.
	SecretNames []string
	// SecretValues are crow-acp's secret values (API keys, database
	// passwords): a variable whose value contains one is dropped whatever
	// its name.
	SecretValues []string
}

// DefaultEnvExcludes are dropped from every child environment: names that
// usually hold credentials, crow-acp's own settings and PostgreSQL's
// password variables.
var DefaultEnvExcludes = []string{"OPENAI_API_KEY", "CROW_*", "*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*",
	"*PASSWD*", "*CREDENTIAL*", "PGPASSFILE", "PGSERVICEFILE", "PGSSLKEY", "PGSSLPASSWORD"}

// coreEnv are the variables inherit = "core" keeps.
var coreEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP",
	"LANG", "LC_*", "TERM", "TZ", "PWD"}

// Environ is the child environment built from parent (os.Environ()).
func (p EnvPolicy) Environ(parent []string) []string {
	vars := make(map[string]string, len(parent))
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		switch p.Inherit {
		case "none":
			continue
		case "core":
			if !matchAny(coreEnv, k) {
				continue
			}
		}
		if matchAny(DefaultEnvExcludes, k) || matchAny(p.Exclude, k) || p.secretName(k) || p.holdsSecret(v) {
			continue
		}
		vars[k] = v
	}
	for k, v := range p.Set {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		if len(p.IncludeOnly) > 0 && !matchAny(p.IncludeOnly, k) {
			continue
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func (p EnvPolicy) secretName(k string) bool {
	for _, n := range p.SecretNames {
		if n != "" && strings.EqualFold(n, k) {
			return true
		}
	}
	return false
}

func (p EnvPolicy) holdsSecret(v string) bool {
	for _, s := range p.SecretValues {
		if len(s) >= 4 && strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// matchAny reports whether name matches one of the glob patterns, ignoring
// case.
func matchAny(patterns []string, name string) bool {
	name = strings.ToUpper(name)
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToUpper(p), name); ok {
			return true
		}
	}
	return false
}

// NonInteractive are set for every command the model runs, locally and in
// the client's terminal: a pager (git log, man) or an editor (git commit,
// rebase -i) would wait for a keypress nobody sends until the command
// times out, and git would prompt for credentials. Colour and CI are left
// alone: they change what programs print or do, not whether they wait.
var NonInteractive = []acp.EnvVariable{
	{Name: "PAGER", Value: "cat"},
	{Name: "GIT_PAGER", Value: "cat"},
	{Name: "MANPAGER", Value: "cat"},
	{Name: "LESS", Value: "-FRX"},
	{Name: "GIT_TERMINAL_PROMPT", Value: "0"},
	{Name: "GIT_EDITOR", Value: "true"},
	{Name: "GIT_SEQUENCE_EDITOR", Value: "true"},
}

// withNonInteractive returns env with the NonInteractive variables set
// (replacing any inherited value).
func withNonInteractive(env []string) []string {
	out := make([]string, 0, len(env)+len(NonInteractive))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(NonInteractive, func(v acp.EnvVariable) bool { return v.Name == k }) {
			out = append(out, kv)
		}
	}
	for _, v := range NonInteractive {
		out = append(out, v.Name+"="+v.Value)
	}
	return out
}

// osEnviron is os.Environ, named for tests.
var osEnviron = os.Environ
