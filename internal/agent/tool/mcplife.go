package tool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
)

// Stdio MCP servers are processes: each holds memory and file descriptors
// for as long as it runs, and a process serving many sessions would
// otherwise keep one per session and server until session/close. So a
// stdio server idle for MCPLimits.IdleTimeout is stopped, and started again
// by the next call of one of its tools; and at most MCPLimits.MaxLive run
// at once in this process: starting one more stops the least recently used
// idle one first. A server's tool list is kept from its first start.

// Defaults of MCPLimits.
const (
	DefaultMCPIdleTimeout = 5 * time.Minute
	DefaultMCPMaxLive     = 16
)

// MCPLimits bound this process's stdio MCP servers.
type MCPLimits struct {
	IdleTimeout time.Duration // 0: DefaultMCPIdleTimeout
	MaxLive     int           // 0: DefaultMCPMaxLive
}

// stdioServers are this process's stdio MCP servers.
var stdioServers = &serverPool{limits: MCPLimits{IdleTimeout: DefaultMCPIdleTimeout, MaxLive: DefaultMCPMaxLive}}

// SetMCPLimits sets the limits of this process's stdio MCP servers (zero
// fields: the defaults). Servers already running over the new cap stop when
// idle and another needs room.
func SetMCPLimits(l MCPLimits) {
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultMCPIdleTimeout
	}
	if l.MaxLive <= 0 {
		l.MaxLive = DefaultMCPMaxLive
	}
	stdioServers.mu.Lock()
	stdioServers.limits = l
	stdioServers.mu.Unlock()
}

// LiveMCPServers is how many stdio MCP servers run in this process.
func LiveMCPServers() int {
	stdioServers.mu.Lock()
	defer stdioServers.mu.Unlock()
	return len(stdioServers.live)
}

// serverPool keeps the running stdio servers, least recently used first.
// Its mutex guards the state of every server in it.
type serverPool struct {
	mu       sync.Mutex
	limits   MCPLimits
	live     []*stdioServer
	starting int // servers starting now: they count against MaxLive
	// log gets the stack of a bug hit while stopping an idle server (the
	// agent's logger, from MCPOptions.Log; nil: not logged).
	log *zap.Logger
}

// stdioServer is one stdio MCP server that can be stopped and started
// again.
type stdioServer struct {
	name  string
	pool  *serverPool
	start func(ctx context.Context) (*mcp.ClientSession, error)

	startMu sync.Mutex // one start at a time

	// Guarded by pool.mu.
	session  *mcp.ClientSession // nil: stopped
	busy     int                // calls in flight
	lastUsed time.Time
	idle     *time.Timer
	closed   bool
}

// acquire returns the server's session, starting the server if it is
// stopped, and a release to call when the call is done.
func (s *stdioServer) acquire(ctx context.Context) (*mcp.ClientSession, func(), error) {
	if sess := s.use(); sess != nil {
		return sess, s.release, nil
	}
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if sess := s.use(); sess != nil { // started meanwhile
		return sess, s.release, nil
	}
	p := s.pool
	p.mu.Lock()
	if s.closed {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("MCP server %q: the session was closed", s.name)
	}
	victim, err := p.makeRoom()
	if err != nil {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("MCP server %q: %w", s.name, err)
	}
	p.starting++
	p.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}

	sess, err := s.start(ctx)
	p.mu.Lock()
	p.starting--
	if err == nil && s.closed {
		err = fmt.Errorf("MCP server %q: the session was closed", s.name)
		defer sess.Close()
	}
	if err != nil {
		p.mu.Unlock()
		return nil, nil, err
	}
	s.session = sess
	s.busy++
	p.live = append(p.live, s)
	p.mu.Unlock()
	return sess, s.release, nil
}

// use returns the running session, marked busy, or nil if stopped.
func (s *stdioServer) use() *mcp.ClientSession {
	p := s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.session == nil || s.closed {
		return nil
	}
	s.busy++
	p.touch(s)
	return s.session
}

// release ends one call; the server stops once idle for IdleTimeout.
func (s *stdioServer) release() {
	p := s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	s.busy--
	s.lastUsed = time.Now()
	if s.busy > 0 || s.session == nil {
		return
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	log := p.log
	s.idle = time.AfterFunc(p.limits.IdleTimeout, func() {
		_ = acp.Safely(log, "stopping idle MCP server "+s.name, func() error { s.stopIfIdle(); return nil })
	})
}

// stopIfIdle stops the server if nothing used it for IdleTimeout.
func (s *stdioServer) stopIfIdle() {
	p := s.pool
	p.mu.Lock()
	if s.busy > 0 || s.session == nil || time.Since(s.lastUsed) < p.limits.IdleTimeout {
		p.mu.Unlock()
		return
	}
	sess := p.stop(s)
	p.mu.Unlock()
	_ = sess.Close()
}

// close stops the server for good (its session was closed).
func (s *stdioServer) close() {
	p := s.pool
	p.mu.Lock()
	s.closed = true
	var sess *mcp.ClientSession
	if s.session != nil {
		sess = p.stop(s)
	}
	p.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
}

// stop takes s out of the live servers and returns its session to close
// (outside the lock: closing waits for the process to exit). p.mu is held.
func (p *serverPool) stop(s *stdioServer) *mcp.ClientSession {
	for i, l := range p.live {
		if l == s {
			p.live = append(p.live[:i], p.live[i+1:]...)
			break
		}
	}
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	sess := s.session
	s.session = nil
	return sess
}

// touch moves s to the most recently used end. p.mu is held.
func (p *serverPool) touch(s *stdioServer) {
	for i, l := range p.live {
		if l == s {
			copy(p.live[i:], p.live[i+1:])
			p.live[len(p.live)-1] = s
			return
		}
	}
}

// makeRoom stops the least recently used idle server when starting one
// more would pass MaxLive, and returns its session to close. If every live
// server is in a call, it refuses. p.mu is held.
func (p *serverPool) makeRoom() (*mcp.ClientSession, error) {
	if len(p.live)+p.starting < p.limits.MaxLive {
		return nil, nil
	}
	for _, s := range p.live {
		if s.busy == 0 {
			return p.stop(s), nil
		}
	}
	return nil, fmt.Errorf("cannot start: %d MCP servers are running and all are in a call (mcp.max_servers)", p.limits.MaxLive)
}

// callTool calls a tool of the server, starting a stopped stdio server
// first. A stdio server whose connection broke (it exited) is stopped, so
// that the next call starts it again.
func (c *mcpConn) callTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if c.server == nil {
		return c.session.CallTool(ctx, p)
	}
	sess, release, err := c.server.acquire(ctx)
	if err != nil {
		return nil, err
	}
	res, err := sess.CallTool(ctx, p)
	release()
	if errors.Is(err, mcp.ErrConnectionClosed) {
		c.server.stopBroken(sess)
	}
	return res, err
}

// close stops the server for good.
func (c *mcpConn) close() error {
	if c.server != nil {
		c.server.close()
		return nil
	}
	return c.session.Close()
}

// stopBroken stops the server if sess, whose connection broke, is still its
// session.
func (s *stdioServer) stopBroken(sess *mcp.ClientSession) {
	p := s.pool
	p.mu.Lock()
	if s.session != sess || s.busy > 0 {
		p.mu.Unlock()
		return
	}
	p.stop(s)
	p.mu.Unlock()
	_ = sess.Close()
}

type mcpConn struct {
	name    string
	session *mcp.ClientSession // an HTTP or SSE server's
	server  *stdioServer       // a stdio server's, stopped when idle (mcplife.go)
	tools   []*mcp.Tool
	asker   *mcpAsker // the server's elicitations, to the user (mcpelicit.go)
}
