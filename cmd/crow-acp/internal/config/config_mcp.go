package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// mcpConfig is the resolved [mcp] table.
type mcpConfig struct {
	idleTimeout Value[time.Duration]
	maxServers  Value[int]
	trusted     Value[[]string]
	callTimeout Value[time.Duration]
}

func checkAtLeastASecond(d time.Duration) error {
	if d < time.Second {
		return fmt.Errorf("%s is too short: at least 1s", d)
	}
	return nil
}

func checkMCPMaxServers(n int) error {
	if n < 1 {
		return fmt.Errorf("%d is out of range: at least 1", n)
	}
	return nil
}

// validateMCP checks the file's [mcp] keys with their lines.
func (f *loadedFile) validateMCP() error {
	m := f.cfg.MCP
	for _, k := range []struct {
		key string
		v   *string
	}{{"mcp.idle_timeout", m.IdleTimeout}, {"mcp.call_timeout", m.CallTimeout}} {
		if k.v == nil {
			continue
		}
		d, err := time.ParseDuration(*k.v)
		if err != nil {
			return f.errorAt(k.key, "%q is not a duration (e.g. \"5m\")", *k.v)
		}
		if err := checkAtLeastASecond(d); err != nil {
			return f.errorAt(k.key, "%v", err)
		}
	}
	if m.MaxServers != nil {
		if err := checkMCPMaxServers(*m.MaxServers); err != nil {
			return f.errorAt("mcp.max_servers", "%v", err)
		}
	}
	return nil
}

// loadMCP applies env > file > default.
func loadMCP(r resolver, m mcpFile) (mcpConfig, error) {
	var c mcpConfig
	var err error
	if c.idleTimeout, err = r.duration("CROW_MCP_IDLE_TIMEOUT", m.IdleTimeout, "mcp.idle_timeout", tool.DefaultMCPIdleTimeout); err != nil {
		return c, err
	}
	if c.maxServers, err = r.int("", "CROW_MCP_MAX_SERVERS", m.MaxServers, "mcp.max_servers", tool.DefaultMCPMaxLive); err != nil {
		return c, err
	}
	if c.callTimeout, err = r.duration("CROW_MCP_CALL_TIMEOUT", m.CallTimeout, "mcp.call_timeout", tool.DefaultMCPCallTimeout); err != nil {
		return c, err
	}
	c.trusted = Value[[]string]{V: m.TrustedServers, From: fromDefault}
	if m.TrustedServers != nil {
		c.trusted.From = r.fileAt("mcp.trusted_servers")
	}
	if v := r.getenv("CROW_MCP_TRUSTED"); v != "" {
		var names []string
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		c.trusted = Value[[]string]{V: names, From: Source{Kind: "env", Detail: "CROW_MCP_TRUSTED"}}
	}
	return c, nil
}

func (c mcpConfig) validate() error {
	if err := checkAtLeastASecond(c.idleTimeout.V); err != nil {
		return Usagef("mcp.idle_timeout: %v (from %s)", err, c.idleTimeout.From)
	}
	if err := checkMCPMaxServers(c.maxServers.V); err != nil {
		return Usagef("mcp.max_servers: %v (from %s)", err, c.maxServers.From)
	}
	if err := checkAtLeastASecond(c.callTimeout.V); err != nil {
		return Usagef("mcp.call_timeout: %v (from %s)", err, c.callTimeout.From)
	}
	return nil
}

func (c mcpConfig) rows() []Row {
	return []Row{
		{"mcp.idle_timeout", c.idleTimeout.V.String(), c.idleTimeout.From},
		{"mcp.max_servers", strconv.Itoa(c.maxServers.V), c.maxServers.From},
		{"mcp.call_timeout", c.callTimeout.V.String(), c.callTimeout.From},
		{"mcp.trusted_servers", orNone(strings.Join(c.trusted.V, ", "), "(none: annotations never skip a permission)"), c.trusted.From},
	}
}

// limits are the bounds of this process's stdio MCP servers.
func (c mcpConfig) limits() tool.MCPLimits {
	return tool.MCPLimits{IdleTimeout: c.idleTimeout.V, MaxLive: c.maxServers.V}
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
