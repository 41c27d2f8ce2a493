package tool

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crow-acp/crow-acp/acp"
)

// httpMCPServer serves an MCP server with one tool over streamable HTTP on
// 127.0.0.1 and counts the requests that carried the credential header.
func httpMCPServer(t *testing.T, credentialed *atomic.Int64) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "Answer pong."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer mcp-secret" && r.Header.Get("X-Api-Key") == "mcp-key" {
			credentialed.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// connected connects srv with opts and waits for the attempt to end.
func connected(t *testing.T, srv acp.McpServer, opts MCPOptions) *MCPSet {
	t.Helper()
	opts.Version = "test"
	set := ConnectMCP([]acp.McpServer{srv}, opts)
	t.Cleanup(set.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set.Wait(ctx)
	return set
}

func connectHTTP(t *testing.T, url string) *MCPSet {
	t.Helper()
	return connected(t, acp.McpServer{Type: "http", Name: "remote", URL: url,
		Headers: []acp.HTTPHeader{{Name: "Authorization", Value: "Bearer mcp-secret"}, {Name: "X-Api-Key", Value: "mcp-key"}}},
		MCPOptions{Timeout: 5 * time.Second})
}

// An HTTP MCP server gets its configured headers and its tools are offered.
func TestMCPHTTPHeadersSent(t *testing.T) {
	var credentialed atomic.Int64
	srv := httpMCPServer(t, &credentialed)
	set := connectHTTP(t, srv.URL)
	if f := set.TakeFailures(); len(f) != 0 {
		t.Fatalf("failures: %v", f)
	}
	if tools := set.Tools(); len(tools) != 1 || tools[0].Definition().Name != "remote__ping" {
		t.Fatalf("tools %v, want remote__ping", tools)
	}
	if credentialed.Load() == 0 {
		t.Error("the server never got the configured headers")
	}
}

// An MCP server's headers are its credentials: a redirect to another origin
// (another port of 127.0.0.1 here) is refused, and they never reach it.
// net/http alone would follow it, and the header transport would add them
// there.
func TestMCPHTTPRedirectToOtherOriginRefused(t *testing.T) {
	var credentialed atomic.Int64
	other := httpMCPServer(t, &credentialed)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer front.Close()
	set := connectHTTP(t, front.URL)
	f := strings.Join(set.TakeFailures(), "\n")
	if !strings.Contains(f, "origin") {
		t.Errorf("failures %q, want the redirect refused for its origin", f)
	}
	if strings.Contains(f, "mcp-secret") || strings.Contains(f, "mcp-key") {
		t.Errorf("the failure shows a credential: %s", f)
	}
	if n := credentialed.Load(); n != 0 {
		t.Errorf("the other origin got the credentials %d times", n)
	}
}

// An HTTP MCP server answering with a JSON body larger than
// MaxMCPResponseBytes fails the connection after that many bytes instead
// of being read into memory whole (the SDK reads a JSON response with
// io.ReadAll). The server here would write 3× the bound.
func TestMCPHTTPResponseBounded(t *testing.T) {
	var written atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(`{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("x", 64<<10))
		for written.Load() < 3*MaxMCPResponseBytes {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(hs.Close) // after the session's Close (connected), which ends its streams
	set := connected(t, acp.McpServer{Type: "http", Name: "huge", URL: hs.URL}, MCPOptions{Timeout: 20 * time.Second})
	f := strings.Join(set.TakeFailures(), "\n")
	if !strings.Contains(f, "larger than") || !strings.Contains(f, "MaxMCPResponseBytes") {
		t.Errorf("failures %q, want the response refused past its bound", f)
	}
	if n := written.Load(); n >= 3*MaxMCPResponseBytes {
		t.Errorf("the server wrote all %d bytes: the body was read past its bound", n)
	}
}

// boundedBody passes a body of exactly the bound and fails one byte more.
func TestBoundedBody(t *testing.T) {
	for _, tc := range []struct {
		size, limit int
		ok          bool
	}{{0, 0, true}, {10, 10, true}, {11, 10, false}, {1 << 20, 1 << 20, true}, {1<<20 + 1, 1 << 20, false}} {
		b := &boundedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("a", tc.size))), left: int64(tc.limit)}
		got, err := io.ReadAll(b)
		if (err == nil) != tc.ok || (tc.ok && len(got) != tc.size) {
			t.Errorf("size %d, limit %d: read %d bytes, err %v; want ok=%v", tc.size, tc.limit, len(got), err, tc.ok)
		}
		if n, again := b.Read(make([]byte, 8)); !tc.ok && (n != 0 || again == nil) {
			t.Errorf("size %d, limit %d: a read after the bound gave %d bytes, %v; want the error again", tc.size, tc.limit, n, again)
		}
	}
}

// A tool call the server never answers is abandoned after the call
// timeout, with a result that says so; the turn's own context is not
// cancelled, and the server's other calls still work.
func TestMCPCallTimeout(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1.0.0"}, nil)
	release := make(chan struct{})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "quick", Description: "Answers."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	// Cleanups run last first: the session closes, the hung handler is
	// released, then the server closes (it waits for its connections).
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) })
	set := connected(t, acp.McpServer{Type: "http", Name: "slow", URL: hs.URL}, MCPOptions{Timeout: 5 * time.Second, CallTimeout: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	byName := map[string]Tool{}
	for _, tl := range set.Tools() {
		byName[tl.Definition().Name] = tl
	}
	run := func(name string) (Result, time.Duration) {
		act, err := byName[name].Prepare(&Env{}, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		return act.Run(ctx, nil), time.Since(start)
	}
	r, took := run("slow__hang")
	if !r.Failed || !strings.Contains(r.Output, "mcp.call_timeout") {
		t.Errorf("hung call: %+v, want a failure naming mcp.call_timeout", r)
	}
	if took > 5*time.Second {
		t.Errorf("the hung call took %s, want about the 200ms timeout", took)
	}
	if ctx.Err() != nil {
		t.Fatal("the turn's context ended")
	}
	if r, _ := run("slow__quick"); r.Failed || r.Output != "quick" {
		t.Errorf("the next call: %+v, want quick", r)
	}
}

// Connecting applies the bounds on a server's tools (boundTools).
func TestMCPConnectBoundsTools(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "wide", Version: "1.0.0"}, nil)
	huge := map[string]any{"type": "object", "description": strings.Repeat("x", MaxMCPToolSchemaBytes)}
	s.AddTool(&mcp.Tool{Name: "huge", InputSchema: huge}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fine", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close) // after the session's Close (connected), which ends its streams
	set := connected(t, acp.McpServer{Type: "http", Name: "wide", URL: hs.URL}, MCPOptions{Timeout: 5 * time.Second})
	var names []string
	for _, tl := range set.Tools() {
		names = append(names, tl.Definition().Name)
	}
	if strings.Join(names, ",") != "wide__fine" {
		t.Errorf("tools %v, want only wide__fine", names)
	}
	if f := strings.Join(set.TakeFailures(), "\n"); !strings.Contains(f, `"huge" of server "wide"`) {
		t.Errorf("failures %q, want the huge schema reported", f)
	}
}

// An SSE server's endpoint event naming another origin does not make
// crow-acp post there, credentials or not.
func TestMCPSSEEndpointOnOtherOriginRefused(t *testing.T) {
	var posted atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posted.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte("event: endpoint\ndata: " + other.URL + "/messages\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(sse.Close) // after the session's Close (connected), which ends its streams
	set := connected(t, acp.McpServer{Type: "sse", Name: "sse", URL: sse.URL}, MCPOptions{Timeout: 3 * time.Second})
	// The refused post ends the session; which error the SDK reports
	// first (the origin refusal, or the stream closing after it) depends
	// on timing, so the test asks only that the server did not start.
	if f := strings.Join(set.TakeFailures(), "\n"); !strings.Contains(f, `MCP server "sse" failed to start`) {
		t.Errorf("failures %q, want the server not started", f)
	}
	if len(set.Tools()) != 0 {
		t.Errorf("tools %d, want none from a server whose endpoint is on another origin", len(set.Tools()))
	}
	if n := posted.Load(); n != 0 {
		t.Errorf("crow-acp posted %d times to the other origin", n)
	}
}
