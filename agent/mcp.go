package agent

import (
	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/agent/tool"
)

// connectMCP (re)connects the session's MCP servers in the background,
// closing any it had in this process.
func (a *Agent) connectMCP(sessionID string, servers []acp.McpServer) {
	var set *tool.MCPSet
	if len(servers) > 0 {
		set = tool.ConnectMCP(servers, tool.MCPOptions{Version: a.cfg.Version, Timeout: a.cfg.MCPConnectTimeout,
			CallTimeout: a.cfg.MCPCallTimeout, Log: a.log, Env: a.cfg.ChildEnv, Trusted: a.cfg.TrustedMCPServers,
			URLElicitation: a.capabilities().ElicitsURL()})
	}
	a.mu.Lock()
	st := a.stateLocked(sessionID)
	old := st.mcp
	st.mcp = set
	if old != nil {
		st.closing.Add(1) // under a.mu: dropState waits for it
	}
	a.mu.Unlock()
	if old != nil {
		goSafe(a.log, "closing MCP servers", func() {
			defer st.closing.Done()
			old.Close()
		})
	}
}

func (a *Agent) mcpSet(sessionID string) *tool.MCPSet {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.sessions[sessionID]; st != nil {
		return st.mcp
	}
	return nil
}
