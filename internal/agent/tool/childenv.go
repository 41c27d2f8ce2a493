package tool

import (
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
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
	gitVars := map[string]string{}
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
		if gitConfigVar(k) {
			// Kept as whole pairs below (GIT_CONFIG_KEY_n would match *KEY*).
			if !matchAny(p.Exclude, k) {
				gitVars[k] = v
			}
			continue
		}
		if matchAny(DefaultEnvExcludes, k) || matchAny(p.Exclude, k) || p.secretName(k) || p.holdsSecret(v) {
			continue
		}
		vars[k] = v
	}
	for k, v := range p.Set {
		if gitConfigVar(k) {
			gitVars[k] = v
			continue
		}
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		if len(p.IncludeOnly) > 0 && !matchAny(p.IncludeOnly, k) {
			continue
		}
		out = append(out, k+"="+v)
	}
	if len(p.IncludeOnly) > 0 && !matchAny(p.IncludeOnly, "GIT_CONFIG_COUNT") {
		gitVars = nil
	}
	out = append(out, p.gitConfig(gitVars)...)
	sort.Strings(out)
	return out
}

// GitSafety are the git settings every command crow-acp starts runs with,
// appended to the GIT_CONFIG_COUNT pairs the environment already holds (a
// later pair wins). safe.bareRepository=explicit: git uses a bare
// repository only when named with --git-dir or GIT_DIR, so a folder the
// model planted with HEAD, config, objects/ and refs/ (its core.fsmonitor
// runs a command) is never picked up by a git command run in or below it.
var GitSafety = [][2]string{{"safe.bareRepository", "explicit"}}

// maxGitConfigPairs bounds the inherited GIT_CONFIG_COUNT.
const maxGitConfigPairs = 1000

// gitConfigVar reports whether k is one of git's GIT_CONFIG_COUNT,
// GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n variables.
func gitConfigVar(k string) bool {
	return k == "GIT_CONFIG_COUNT" || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_")
}

// gitConfig renumbers the pairs vars holds (GIT_CONFIG_COUNT of them; a
// pair that is incomplete or whose value holds a secret is dropped) and
// appends GitSafety.
func (p EnvPolicy) gitConfig(vars map[string]string) []string {
	var pairs [][2]string
	if n, err := strconv.Atoi(vars["GIT_CONFIG_COUNT"]); err == nil && n > 0 && n <= maxGitConfigPairs {
		for i := range n {
			k, okK := vars["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
			v, okV := vars["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]
			if okK && okV && k != "" && !p.holdsSecret(v) {
				pairs = append(pairs, [2]string{k, v})
			}
		}
	}
	pairs = append(pairs, GitSafety...)
	out := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(pairs))}
	for i, kv := range pairs {
		out = append(out, "GIT_CONFIG_KEY_"+strconv.Itoa(i)+"="+kv[0], "GIT_CONFIG_VALUE_"+strconv.Itoa(i)+"="+kv[1])
	}
	return out
}

// GitConfigEnv returns the GIT_CONFIG_* variables of env (a child
// environment), for a command run elsewhere (the client's terminal).
func GitConfigEnv(env []string) []acp.EnvVariable {
	var out []acp.EnvVariable
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && gitConfigVar(k) {
			out = append(out, acp.EnvVariable{Name: k, Value: v})
		}
	}
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
