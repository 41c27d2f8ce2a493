package config

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres"
	"github.com/crow-acp/crow-acp/internal/secret"
)

func checkInherit(s string) error {
	switch s {
	case "all", "core", "none":
		return nil
	}
	return fmt.Errorf("unknown value %q: use all, core or none", s)
}

func (f *loadedFile) validateEnvPolicy() error {
	p := f.cfg.EnvPolicy
	if p.Inherit != nil {
		if err := checkInherit(*p.Inherit); err != nil {
			return f.errorAt("shell_environment_policy.inherit", "%v", err)
		}
	}
	for key, list := range map[string][]string{"exclude": p.Exclude, "include_only": p.IncludeOnly} {
		for _, pat := range list {
			if strings.TrimSpace(pat) == "" || strings.Contains(pat, "=") {
				return f.errorAt("shell_environment_policy."+key, "%q is not a variable name pattern", pat)
			}
		}
	}
	for k := range p.Set {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return f.errorAt("shell_environment_policy.set", "%q is not a variable name", k)
		}
	}
	return nil
}

// resolveEnvPolicy builds the child environment policy from the file and
// what the configuration knows to be secret: every provider's api_key_env
// (and the default OPENAI_API_KEY) by name, the API key, header values and
// passwords by value.
func (c *Settings) resolveEnvPolicy(fc fileConfig, fileAt func(string) Source) {
	p := fc.EnvPolicy
	c.envPolicy = tool.EnvPolicy{Inherit: deref(p.Inherit, "all"), Exclude: p.Exclude, IncludeOnly: p.IncludeOnly, Set: p.Set}
	c.envPolicyFrom = fromDefault
	if p.Inherit != nil || p.Exclude != nil || p.IncludeOnly != nil || p.Set != nil {
		c.envPolicyFrom = fileAt("shell_environment_policy")
	}
	names := []string{defaultAPIKeyEnv, c.APIKeyEnv.V}
	for _, name := range sortedKeys(fc.Providers) {
		if e := fc.Providers[name].APIKeyEnv; e != nil {
			names = append(names, *e)
		}
	}
	c.envPolicy.SecretNames = names
	c.envPolicy.SecretValues = c.secretValues()
}

// secretValues are the configured secrets themselves: every provider's
// API key and header values, and passwords in the base URL or the
// database URL. The redactor and the child environment both use them.
func (c *Settings) secretValues() []string {
	out := []string{c.APIKey.V}
	for _, v := range c.Headers.V {
		out = append(out, v)
	}
	for _, name := range sortedKeys(c.providers) {
		p := c.providers[name]
		out = append(out, p.key.V)
		for _, v := range p.Headers {
			out = append(out, v)
		}
	}
	out = append(out, c.urlPasswords()...)
	return out
}

// knownSecrets returns the secrets removed from the model's text: every
// provider's API key, header values whose name says they are credentials
// (a value such as an X-Title of "crow-acp" is not: redacting it would
// mangle ordinary replies), passwords in the base URL and database URL, and
// every key in the credentials file as it is now (a login while crow-acp
// serves adds one; another provider's key is as secret as this one's).
// The configured part is worked out once; the credentials file is read
// again only when its size or modification time changed, since the result
// is asked for at every model request.
func (c *Settings) knownSecrets() func() []string {
	fixed := []string{c.APIKey.V}
	headers := []map[string]string{c.Headers.V}
	for _, name := range sortedKeys(c.providers) {
		fixed = append(fixed, c.providers[name].key.V)
		headers = append(headers, c.providers[name].Headers)
	}
	for _, h := range headers {
		for _, k := range sortedKeys(h) {
			if credentialHeader(k) {
				fixed = append(fixed, h[k])
				if _, token, ok := strings.Cut(h[k], " "); ok { // "Bearer KEY"
					fixed = append(fixed, token)
				}
			}
		}
	}
	fixed = append(fixed, c.urlPasswords()...)
	var (
		mu     sync.Mutex
		seen   os.FileInfo
		stored []string
	)
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		st, err := os.Stat(c.Credentials)
		if err != nil {
			st = nil
		}
		if !sameFile(st, seen) {
			stored, seen = nil, st
			vars, _ := readCredentials(c.Credentials)
			for _, k := range sortedKeys(vars) {
				stored = append(stored, vars[k])
			}
		}
		return append(slices.Clone(fixed), stored...)
	}
}

// sameFile reports whether two stats of one path show the same contents
// (size and modification time), both absent counting as the same.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// urlPasswords are the passwords in the base URL and the database URL
// (either form of a PostgreSQL DSN).
func (c *Settings) urlPasswords() []string {
	var out []string
	for _, raw := range []string{c.BaseURL.V, c.DB.V} {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			}
		}
	}
	if pw := postgres.Password(c.DB.V); pw != "" {
		out = append(out, pw)
	}
	return out
}

// credentialHeader reports whether an HTTP header of this name carries a
// credential.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "password"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// childEnv is the environment of commands and MCP stdio servers.
func (c *Settings) childEnv() []string { return c.envPolicy.Environ(os.Environ()) }

// envPolicyRows are the [shell_environment_policy] lines of `config show`;
// values given with set are not shown, only their names.
func (c *Settings) envPolicyRows() []Row {
	p := c.envPolicy
	list := func(v []string, none string) string {
		if len(v) == 0 {
			return none
		}
		return strings.Join(v, ", ")
	}
	set := make([]string, 0, len(p.Set))
	for k := range p.Set {
		set = append(set, k)
	}
	sort.Strings(set)
	return []Row{
		{"shell_environment_policy.inherit", p.Inherit, c.envPolicyFrom},
		{"shell_environment_policy.exclude", list(dedupe(append(append(append([]string{}, p.Exclude...), tool.DefaultEnvExcludes...), p.SecretNames...)), ""), c.envPolicyFrom},
		{"shell_environment_policy.include_only", list(p.IncludeOnly, "(all)"), c.envPolicyFrom},
		{"shell_environment_policy.set", list(set, "(none)"), c.envPolicyFrom},
	}
}

func dedupe(v []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range v {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Redactor removes every configured secret from text crow-acp prints or
// logs (config show, doctor, the log).
func (c *Settings) Redactor() *secret.Redactor { return secret.NewRedactor(c.secretValues()...) }
