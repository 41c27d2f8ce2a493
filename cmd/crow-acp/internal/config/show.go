package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/internal/persistence/backend"
)

// FileStatus is the configuration file for `config show`: its path and
// whether it exists.
func (c *Settings) FileStatus() string {
	switch {
	case c.File == "":
		return "none (no home directory; set CROW_CONFIG)"
	case c.FileFound:
		return c.File
	default:
		return c.File + " (not found: built-in defaults apply)"
	}
}

// Rows lists every setting, secrets masked.
func (c *Settings) Rows() []Row {
	str := func(key string, v Value[string], empty string) Row {
		s := v.V
		if s == "" {
			s = empty
		}
		return Row{key, s, v.From}
	}
	num := func(key string, v Value[int], zero string) Row {
		s := strconv.Itoa(v.V)
		if v.V == 0 && zero != "" {
			s = zero
		}
		return Row{key, s, v.From}
	}
	provider := c.Provider
	if provider.V == "" {
		provider.V = "(built-in)"
	}
	rows := []Row{
		str("model", c.Model, ""),
		str("provider", provider, ""),
		str("base_url", c.BaseURL, ""),
		str("api_key_env", c.APIKeyEnv, ""),
		{"api_key", maskSecret(c.APIKey.V), c.APIKey.From},
		{"headers", formatHeaders(c.Headers.V), c.Headers.From},
		num("context_window", c.ContextWindow, "(not configured)"),
		num("output_reserve", c.outputReserve, "(not configured)"),
		num("max_model_calls", c.maxModelCalls, ""),
	}
	toolRows, sessionRows := c.toolAndSessionRows()
	rows = append(rows, toolRows...)
	rows = append(rows, num("max_line_bytes", c.MaxLineBytes, ""))
	rows = append(rows, sessionRows...)
	rows = append(rows, c.promptRows()...)
	rows = append(rows, []Row{
		{"database.path", backend.Describe(c.DB.V), c.DB.From}, // never a password
		str("log.file", c.LogFile, "(stderr for serve; none for other commands)"),
		str("log.level", c.LogLevel, ""),
	}...)
	rows = append(rows, c.compactionRows()...)
	rows = append(rows, str("permissions.mode", c.permissionMode, ""))
	rows = append(rows, c.envPolicyRows()...)
	rows = append(rows, c.limits.rows()...)
	rows = append(rows, c.mcp.rows()...)
	red := c.Redactor()
	for i := range rows {
		rows[i].Value = red.Redact(rows[i].Value)
	}
	return rows
}

// maskSecret shows that a secret is set without showing it: the last four
// characters of long secrets help tell two keys apart, as dashboards do.
func maskSecret(s string) string {
	switch {
	case s == "":
		return "(not set)"
	case len(s) >= 16:
		return "****" + s[len(s)-4:]
	default:
		return "****"
	}
}

func formatHeaders(h map[string]string) string {
	if len(h) == 0 {
		return "(none)"
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		// Any header may carry a credential (X-Auth, X-Api, a custom
		// name): every value is masked.
		parts[i] = k + "=" + maskSecret(h[k])
	}
	return strings.Join(parts, ", ")
}
