package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/origin"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// DefaultMCPConnectTimeout bounds connecting to one MCP server and listing
// its tools.
const DefaultMCPConnectTimeout = 20 * time.Second

// DefaultMCPCallTimeout bounds one MCP tool call: a server is untrusted,
// and one that never answers must not hold a turn until someone cancels
// it (a CI job has nobody to).
const DefaultMCPCallTimeout = 5 * time.Minute

// MCPSet is the MCP servers of one session. It connects in the background;
// the first turn waits for the attempts to settle.
type MCPSet struct {
	done   chan struct{} // closed when every connection attempt has ended
	cancel context.CancelFunc

	trusted     map[string]bool // servers whose annotations are believed
	callTimeout time.Duration   // of one tool call

	mu       sync.Mutex
	conns    []*mcpConn
	tools    []Tool   // named once every attempt ended (nameTools)
	failures []string // not yet reported to the user
	closed   bool
}

// MCPOptions are what connecting a session's MCP servers needs beyond the
// servers.
type MCPOptions struct {
	Version     string        // crow-acp's, sent as the client version
	Timeout     time.Duration // per server; 0 = DefaultMCPConnectTimeout
	CallTimeout time.Duration // per tool call; 0 = DefaultMCPCallTimeout
	// Env is the environment of stdio servers (nil: the default EnvPolicy
	// over crow-acp's own); each server's own env entries are added.
	Env []string
	// Trusted names the servers whose tool annotations are believed: a
	// trusted server's readOnlyHint tool runs like a read. Annotations of
	// any other server are untrusted hints (as the MCP spec says) and
	// change nothing.
	Trusted []string
	// URLElicitation: the ACP client takes URL elicitations, so servers
	// are told they may send them (forms are always passed on).
	URLElicitation bool
	// Log gets the stack of a bug hit while connecting (nil: not logged).
	Log *zap.Logger
}

// ConnectMCP starts connecting to servers and returns at once.
func ConnectMCP(servers []acp.McpServer, opts MCPOptions) *MCPSet {
	childEnv, version, timeout := opts.Env, opts.Version, opts.Timeout
	if childEnv == nil {
		childEnv = EnvPolicy{}.Environ(os.Environ())
	}
	if timeout <= 0 {
		timeout = DefaultMCPConnectTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &MCPSet{done: make(chan struct{}), cancel: cancel, trusted: map[string]bool{}, callTimeout: opts.CallTimeout}
	if s.callTimeout <= 0 {
		s.callTimeout = DefaultMCPCallTimeout
	}
	for _, n := range opts.Trusted {
		s.trusted[n] = true
	}
	if opts.Log != nil {
		stdioServers.mu.Lock()
		stdioServers.log = opts.Log
		stdioServers.mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c *mcpConn
			var dropped []string
			// A server's bytes reach the MCP SDK here: a bug they trip fails
			// this server only, not the process.
			err := acp.Safely(opts.Log, "connecting to MCP server "+srv.Name, func() (err error) {
				if c, err = connectOne(ctx, srv, version, timeout, childEnv, opts.URLElicitation); err == nil {
					dropped = c.boundTools() // outside the lock: it encodes every schema
				}
				return err
			})
			s.mu.Lock()
			defer s.mu.Unlock()
			switch {
			case err != nil:
				s.failures = append(s.failures, fmt.Sprintf("MCP server %q failed to start: %v. Its tools are not available in this session.", srv.Name, err))
			case s.closed:
				_ = c.close()
			default:
				s.failures = append(s.failures, dropped...)
				s.conns = append(s.conns, c)
			}
		}()
	}
	go func() {
		wg.Wait()
		s.nameTools()
		close(s.done)
	}()
	return s
}

// nameTools gives every connected tool its model-facing name,
// SERVER__TOOL. Two tools that would get the same name (server a's tool
// b__c and server a__b's tool c; names that differ only in characters
// replaced by _ or past 64 characters) would shadow each other and share a
// permission rule: neither is offered, and the user is told.
func (s *MCPSet) nameTools() {
	s.mu.Lock()
	defer s.mu.Unlock()
	type owner struct{ server, tool string }
	byName := map[string][]owner{}
	for _, c := range s.conns {
		for _, t := range c.tools {
			n := mcpName(c.name, t.Name)
			byName[n] = append(byName[n], owner{c.name, t.Name})
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	s.tools = nil
	for _, c := range s.conns {
		for _, t := range c.tools {
			if n := mcpName(c.name, t.Name); len(byName[n]) == 1 {
				s.tools = append(s.tools, &mcpTool{conn: c, tool: t, name: n, trusted: s.trusted[c.name], timeout: s.callTimeout})
			}
		}
	}
	for _, n := range names {
		if o := byName[n]; len(o) > 1 {
			parts := make([]string, len(o))
			for i, w := range o {
				parts[i] = fmt.Sprintf("%q of server %q", w.tool, w.server)
			}
			s.failures = append(s.failures, fmt.Sprintf("MCP tools %s would all be called %s; none of them is available in this session (rename a server).",
				strings.Join(parts, " and "), n))
		}
	}
}

func connectOne(ctx context.Context, srv acp.McpServer, version string, timeout time.Duration, childEnv []string, urlElicit bool) (*mcpConn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &mcpConn{name: srv.Name, asker: &mcpAsker{server: srv.Name}}
	client := mcp.NewClient(&mcp.Implementation{Name: "crow-acp", Version: version}, c.asker.clientOptions(urlElicit))
	var (
		t    mcp.Transport
		sess *mcp.ClientSession
		err  error
	)
	switch srv.Type {
	case "", "stdio":
		if srv.Command == "" {
			return nil, errors.New("no command")
		}
		c.server = &stdioServer{name: srv.Name, pool: stdioServers, start: func(ctx context.Context) (*mcp.ClientSession, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return startStdio(ctx, client, srv, childEnv)
		}}
		var release func()
		if sess, release, err = c.server.acquire(ctx); err != nil {
			return nil, err
		}
		defer release()
	case "http":
		t = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: mcpHTTPClient(srv), MaxRetries: -1}
	case "sse":
		t = &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: mcpHTTPClient(srv)}
	default:
		return nil, fmt.Errorf("unsupported transport %q", srv.Type)
	}
	if t != nil {
		if sess, err = client.Connect(ctx, t, nil); err != nil {
			return nil, err
		}
		c.session = sess
	}
	for tl, err := range sess.Tools(ctx, nil) {
		if err != nil {
			_ = c.close()
			return nil, fmt.Errorf("list tools: %w", err)
		}
		c.tools = append(c.tools, tl)
	}
	return c, nil
}

// startStdio starts a stdio server's process and connects to it.
func startStdio(ctx context.Context, client *mcp.Client, srv acp.McpServer, childEnv []string) (*mcp.ClientSession, error) {
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = append([]string(nil), childEnv...)
	for _, e := range srv.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	stderr := &capBuffer{limit: 2048}
	cmd.Stderr = stderr
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return nil, withStderr(err, stderr)
	}
	return sess, nil
}

func withStderr(err error, stderr *capBuffer) error {
	if stderr == nil {
		return err
	}
	if out, _ := stderr.result(); strings.TrimSpace(out) != "" {
		return fmt.Errorf("%w (stderr: %s)", err, strings.TrimSpace(out))
	}
	return err
}

// What one MCP server's tools may add to every model request, which carries
// their definitions: a server is untrusted, and a huge tool list would
// make each request large and costly, or refused (OpenAI takes 128 tools).
const (
	MaxMCPToolsPerServer  = 128
	MaxMCPToolSchemaBytes = 64 << 10 // one tool's input schema, as JSON
)

// boundTools drops the tools past MaxMCPToolsPerServer and those whose input
// schema is larger than MaxMCPToolSchemaBytes, and says so.
func (c *mcpConn) boundTools() (notes []string) {
	kept := c.tools[:0]
	for _, t := range c.tools {
		if b, err := json.Marshal(t.InputSchema); err != nil || len(b) > MaxMCPToolSchemaBytes {
			notes = append(notes, fmt.Sprintf("MCP tool %q of server %q has an input schema of %d bytes, more than %d: it is not available in this session (every model request would carry it).",
				t.Name, c.name, len(b), MaxMCPToolSchemaBytes))
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) > MaxMCPToolsPerServer {
		notes = append(notes, fmt.Sprintf("MCP server %q lists %d tools; only its first %d are available in this session.",
			c.name, len(kept), MaxMCPToolsPerServer))
		kept = kept[:MaxMCPToolsPerServer]
	}
	c.tools = kept
	return notes
}

// MaxMCPResponseBytes bounds one response body of an HTTP MCP server that
// is not an event stream (a JSON-RPC message: the SDK reads it whole), as
// the SDK bounds a stdio server's message and one server-sent event.
const MaxMCPResponseBytes = mcp.DefaultMaxLineLength

// mcpHTTPClient is the client of an HTTP or SSE server. Every request
// stays on its URL's origin (package origin): its headers are its
// credentials and go nowhere else, not along a redirect, and an SSE
// server's endpoint event cannot make crow-acp post to another host. Every
// response body that is not an event stream is bounded by
// MaxMCPResponseBytes: the server is untrusted, and the SDK would read any
// length into memory.
func mcpHTTPClient(srv acp.McpServer) *http.Client {
	var t http.RoundTripper = boundedBodies{next: http.DefaultTransport, limit: MaxMCPResponseBytes}
	if len(srv.Headers) > 0 {
		t = headerTransport{headers: srv.Headers, next: t}
	}
	if u, err := url.Parse(srv.URL); err == nil {
		t = origin.Transport(u, t)
	} // else the connection fails on the URL
	return &http.Client{Transport: t}
}

type headerTransport struct {
	headers []acp.HTTPHeader
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, hd := range h.headers {
		r.Header.Set(hd.Name, hd.Value)
	}
	return h.next.RoundTrip(r)
}

// boundedBodies cuts a response body that is not an event stream after
// limit bytes: reading more fails.
type boundedBodies struct {
	next  http.RoundTripper
	limit int64
}

func (b boundedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: b.limit}
	}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	left int64 // bytes still allowed
	err  error // once past the bound, every later read's
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the bound tells a longer body
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		b.err = fmt.Errorf("the server's response is larger than %d bytes (MaxMCPResponseBytes); not read further", MaxMCPResponseBytes)
		return 0, b.err
	}
	return n, err
}

// Wait waits until every connection attempt has ended or ctx is done.
func (s *MCPSet) Wait(ctx context.Context) {
	select {
	case <-s.done:
	case <-ctx.Done():
	}
}

// TakeFailures returns the failures not reported yet.
func (s *MCPSet) TakeFailures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failures
	s.failures = nil
	return f
}

// Tools are the tools of the connected servers, named server__tool; none
// until every connection attempt has ended.
func (s *MCPSet) Tools() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Tool(nil), s.tools...)
}

// Close stops connecting and closes every server (stdio servers are
// stopped).
func (s *MCPSet) Close() {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.close()
		}()
	}
	wg.Wait()
}

// Compiled on first use: package initialisers run before initialize is
// answered (TestStartupInitCost).
var nameUnsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-zA-Z0-9_-]+`) })

// mcpName namespaces a server's tool for the model (names must match
// ^[a-zA-Z0-9_-]{1,64}$).
func mcpName(server, tool string) string {
	n := nameUnsafe().ReplaceAllString(server, "_") + "__" + nameUnsafe().ReplaceAllString(tool, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

type mcpTool struct {
	conn    *mcpConn
	tool    *mcp.Tool
	name    string
	trusted bool          // the user trusts this server's annotations
	timeout time.Duration // of one call
}

func (t *mcpTool) Definition() provider.Tool {
	params, _ := t.tool.InputSchema.(map[string]any)
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	desc := t.tool.Description
	if len(desc) > 1024 {
		desc = desc[:1024]
	}
	return provider.Tool{Name: t.name, Description: desc, Parameters: params}
}

func (t *mcpTool) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var args map[string]any
	if err := decode(raw, &args); err != nil {
		return nil, err
	}
	title := t.tool.Title
	if title == "" && t.tool.Annotations != nil {
		title = t.tool.Annotations.Title
	}
	if title == "" {
		title = t.tool.Name
	}
	act := &Action{
		Title: t.conn.name + ": " + title, Kind: acp.ToolKindOther, Access: AccessOther,
		PermissionKey: "mcp:" + t.name, Server: t.conn.name,
	}
	// Annotations are the server's claims; only a server the user trusts
	// can make a tool run without asking by calling it read-only.
	if a := t.tool.Annotations; t.trusted && a != nil && a.ReadOnlyHint {
		act.Access, act.Kind = AccessRead, acp.ToolKindRead
	}
	callID := env.CallID
	act.Run = func(turn context.Context, _ func([]acp.ToolCallContent)) Result {
		ctx, cancel := context.WithTimeout(turn, t.timeout)
		defer cancel()
		endAsking := t.conn.asker.during(ctx, env, callID)
		res, err := t.conn.callTool(ctx, &mcp.CallToolParams{Name: t.tool.Name, Arguments: args})
		notes := endAsking()
		if err != nil {
			switch {
			case turn.Err() != nil:
				return Failure("cancelled")
			case ctx.Err() != nil:
				return withNotes(Failure("MCP server %q did not answer %s within %s (mcp.call_timeout); the call was abandoned", t.conn.name, t.tool.Name, t.timeout), notes)
			}
			return withNotes(Failure("MCP server %q: %v", t.conn.name, err), notes)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			switch c := c.(type) {
			case *mcp.TextContent:
				b.WriteString(c.Text)
			case *mcp.EmbeddedResource:
				if c.Resource != nil && c.Resource.Text != "" {
					b.WriteString(c.Resource.Text)
				} else if c.Resource != nil {
					fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
				}
			case *mcp.ResourceLink:
				fmt.Fprintf(&b, "[resource link %s]", c.URI)
			case *mcp.ImageContent:
				fmt.Fprintf(&b, "[image %s, not shown]", c.MIMEType)
			default:
				b.WriteString("[unsupported content]")
			}
		}
		if b.Len() == 0 && res.StructuredContent != nil {
			if js, err := json.Marshal(res.StructuredContent); err == nil {
				b.Write(js)
			}
		}
		r := cutResult(env, textResult(b.String()))
		if res.IsError {
			r.Failed = true
			r.Output = "Error: " + r.Output
		}
		return withNotes(r, notes)
	}
	return act, nil
}

// withNotes adds crow-acp's notes about a call (an elicitation it refused)
// after the server's result, for the model and the user.
func withNotes(r Result, notes []string) Result {
	if len(notes) == 0 {
		return r
	}
	note := strings.Join(notes, "\n")
	r.Output += "\n\n" + note
	if r.Full != "" {
		r.Full += "\n\n" + note
	}
	r.Content = append(r.Content, acp.ToolText(note))
	return r
}
