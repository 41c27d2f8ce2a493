package agent

import (
	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// connectMCP (re)connects the session's MCP servers in the background,
// closing any it had in this process.
func (tr *turns) connectMCP(sess *session, servers []acp.McpServer) {
	var set *tool.MCPSet
	if len(servers) > 0 {
		set = tool.ConnectMCP(servers, tool.MCPOptions{Version: tr.cfg.Version, Timeout: tr.cfg.MCPConnectTimeout,
			CallTimeout: tr.cfg.MCPCallTimeout, Log: tr.log, Env: tr.cfg.ChildEnv, Trusted: tr.cfg.TrustedMCPServers,
			URLElicitation: tr.capabilities().ElicitsURL()})
	}
	sess.mu.Lock()
	old := sess.mcp
	sess.mcp = set
	if old != nil {
		sess.closing.Add(1) // under sess.mu: sessionTable.drop waits for it
	}
	sess.mu.Unlock()
	if old != nil {
		request.GoSafe(tr.log, "closing MCP servers", func() {
			defer sess.closing.Done()
			old.Close()
		})
	}
}

// mcpServers is the session's MCP set (nil: none).
func (sess *session) mcpServers() *tool.MCPSet {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.mcp
}
