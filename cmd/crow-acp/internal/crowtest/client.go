package crowtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
)

// Client is crow-acp's own ACP client connection (acp.ClientConn) to one
// agent, with what tests watch around it: every frame the agent wrote (for
// the secret scans) and its answers to lines that had no id. Its own
// methods fail the test on an error; the embedded connection's return it.
type Client struct {
	*acp.ClientConn
	acp.UnimplementedClient
	t testing.TB

	mu       sync.Mutex
	seen     bytes.Buffer                   // every frame read
	onUpdate func(*acp.SessionNotification) // set by Watch
	stray    chan []byte                    // responses with id null
}

// NewClient connects to an agent that reads in and writes out.
func NewClient(t testing.TB, in io.Writer, out io.Reader) *Client {
	c := &Client{t: t, stray: make(chan []byte, 16)}
	c.ClientConn = acp.NewClientConn(out, in, c, acp.Options{OnFrame: c.frame})
	t.Cleanup(func() { _ = c.ClientConn.Close() })
	return c
}

func (c *Client) frame(dir acp.Direction, b []byte) {
	if dir != acp.Inbound {
		return
	}
	c.mu.Lock()
	c.seen.Write(b)
	c.seen.WriteByte('\n')
	c.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(b, &m) == nil && m.Method == "" && string(m.ID) == "null" {
		c.stray <- append([]byte(nil), b...)
	}
}

// SessionUpdate hands updates to the function Watch installed.
func (c *Client) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	c.mu.Lock()
	fn := c.onUpdate
	c.mu.Unlock()
	if fn != nil {
		fn(n)
	}
	return nil
}

// Watch passes every update from now on to fn (nil: none). It runs on the
// connection's read loop.
func (c *Client) Watch(fn func(*acp.SessionNotification)) {
	c.mu.Lock()
	c.onUpdate = fn
	c.mu.Unlock()
}

// WithUpdates passes the updates that arrive while call runs to fn (they
// are all handled by the time a call returns).
func (c *Client) WithUpdates(fn func(*acp.SessionNotification), call func()) {
	c.Watch(fn)
	defer c.Watch(nil)
	call()
}

// Frames is every frame the agent wrote so far.
func (c *Client) Frames() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.seen.Bytes()...)
}

// NextStray waits for the agent's answer to a line without a usable id.
func (c *Client) NextStray() []byte {
	c.t.Helper()
	select {
	case b := <-c.stray:
		return b
	case <-time.After(20 * time.Second):
		c.t.Fatal("timed out waiting for the agent's answer")
		return nil
	}
}

// Ctx bounds each call of a test.
func (c *Client) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	c.t.Cleanup(cancel)
	return ctx
}

// Init sends initialize.
func (c *Client) Init() {
	c.t.Helper()
	if _, err := c.Initialize(c.Ctx(), &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
}

// Session opens a new session in cwd and returns its id.
func (c *Client) Session(cwd string) string {
	c.t.Helper()
	res, err := c.NewSession(c.Ctx(), &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil || res.SessionID == "" {
		c.t.Fatalf("session/new: %+v, %v", res, err)
	}
	return res.SessionID
}

// Send prompts the session with text.
func (c *Client) Send(sid, text string) (*acp.PromptResponse, error) {
	return c.Prompt(c.Ctx(), TextPrompt(sid, text))
}

// StopReason runs a prompt that must succeed.
func (c *Client) StopReason(sid, text string) acp.StopReason {
	c.t.Helper()
	res, err := c.Send(sid, text)
	if err != nil {
		c.t.Fatalf("prompt %q: %v", text, err)
	}
	return res.StopReason
}

// Load loads a session, passing its replay to fn (may be nil).
func (c *Client) Load(sid, cwd string, fn func(*acp.SessionNotification)) {
	c.t.Helper()
	var err error
	c.WithUpdates(fn, func() {
		_, err = c.LoadSession(c.Ctx(), &acp.LoadSessionRequest{SessionID: sid, Cwd: cwd, McpServers: []acp.McpServer{}})
	})
	if err != nil {
		c.t.Fatalf("session/load: %v", err)
	}
}

// RPCError is a JSON-RPC error answer, its data decoded.
type RPCError struct {
	Code    int
	Message string
	Data    map[string]any
}

// ErrorOf is the JSON-RPC error a call failed with.
func ErrorOf(t testing.TB, err error) RPCError {
	t.Helper()
	var e *acp.Error
	if !errors.As(err, &e) {
		t.Fatalf("expected an error answer, got %v", err)
	}
	out := RPCError{Code: e.Code, Message: e.Message}
	if raw, ok := e.Data.(json.RawMessage); ok {
		_ = json.Unmarshal(raw, &out.Data)
	}
	return out
}

// TextPrompt is a prompt of one text block.
func TextPrompt(sid, text string) *acp.PromptRequest {
	return &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}
}

// ChunkText returns the text of an agent_message_chunk update, or "".
func ChunkText(n *acp.SessionNotification) string {
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		return c.Content.Text.Text
	}
	return ""
}

// UserText returns the text of a user_message_chunk update, or "".
func UserText(n *acp.SessionNotification) string {
	if c := n.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
		return c.Content.Text.Text
	}
	return ""
}

// AgentEnv is the environment of one agent, in process or binary, against
// the model at modelURL: a fresh data directory and configuration home,
// debug logs, retries 1 ms apart; extra on top. It returns the environment
// and a project directory.
func AgentEnv(t testing.TB, modelURL string, extra map[string]string) (map[string]string, string) {
	t.Helper()
	dir := t.TempDir()
	cwd := filepath.Join(dir, "project")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"OPENAI_BASE_URL":        modelURL,
		"OPENAI_API_KEY":         "",
		"CROW_MODEL":             "robust-model",
		"CROW_DB":                filepath.Join(dir, "data", "crow.db"),
		"CROW_LOG_LEVEL":         "debug",
		"CROW_MODEL_RETRY_DELAY": "1ms",
		"XDG_CONFIG_HOME":        dir,
		"HOME":                   dir,
	}
	for k, v := range extra {
		env[k] = v
	}
	return env, cwd
}
