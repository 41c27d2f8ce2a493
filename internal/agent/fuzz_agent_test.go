package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/acptest"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

// okModel answers every request with a short streamed text.
type okModel struct{}

func (okModel) Stream(ctx context.Context, _ provider.Request, on func(provider.Event) error) (*provider.Result, error) {
	if err := on(provider.Event{Kind: provider.EventText, Text: "ok"}); err != nil {
		return &provider.Result{}, err
	}
	return &provider.Result{Text: "ok", FinishReason: provider.FinishStop}, ctx.Err()
}

const fuzzSession = "sess_fuzz"

// FuzzAgent sends arbitrary client input to the real agent (every method
// and extension it implements, a real SQLite store holding session
// sess_fuzz) over a real connection, then one good request. Every frame the
// agent writes must be valid under the ACP schema, error codes must be
// JSON-RPC's, and the good request must be answered: no input, however
// wrong, breaks a handler or the connection.
func FuzzAgent(f *testing.F) {
	for _, s := range agentSeeds {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	validator := acptest.MustValidator(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		if _, err := store.GetSession(ctx, fuzzSession); errors.Is(err, persistence.ErrNotFound) {
			if err := store.CreateSession(ctx, &persistence.Session{ID: fuzzSession, Cwd: dir}); err != nil {
				t.Fatal(err)
			}
		}
		input := []byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n")
		input = append(append(input, in...), '\n')
		input = append(input, `{"jsonrpc":"2.0","id":"probe-9c1d","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n"...)
		var out syncbuf.Buffer
		methods := requestMethods(input)
		// The input stays open until every request has its answer, so
		// turns run to the end instead of being cancelled by the close.
		inR, inW := io.Pipe()
		go func() {
			_, _ = inW.Write(input)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && !allAnswered(out.Bytes(), methods) {
				time.Sleep(time.Millisecond)
			}
			inW.Close()
		}()
		conn := acp.NewConn(inR, &out, acp.Options{MaxLineBytes: 1 << 16})
		a := agent.New(conn, store, okModel{}, agent.Config{Model: "m", ConnectionID: "fuzz", Checkpoints: store, CheckpointTrees: filepath.Join(dir, "trees"),
			Retry: agent.RetryPolicy{MaxAttempts: 1}}, nil)
		done := make(chan struct{})
		go func() { _ = conn.Serve(ctx, a); a.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("the connection did not end after its input; input %q", in)
		}
		answered := false
		for _, fr := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(fr) == 0 {
				continue
			}
			if err := validator.ValidateAgentFrame(fr, func(id json.RawMessage) string { return methods[string(id)] }); err != nil {
				t.Fatalf("invalid frame for input %q:\n%v", in, err)
			}
			var m struct {
				ID    json.RawMessage
				Error *struct{ Code int }
			}
			_ = json.Unmarshal(fr, &m)
			if m.Error != nil && m.Error.Code != acp.CodeRequestCancelled && (m.Error.Code > -32000 || m.Error.Code < -32768) {
				t.Fatalf("error code %d outside JSON-RPC's range: %s", m.Error.Code, fr)
			}
			if string(m.ID) == `"probe-9c1d"` && m.Error == nil {
				answered = true
			}
		}
		if !answered {
			t.Fatalf("the request after the input was not answered; input %q\noutput %s", in, out.Bytes())
		}
	})
}

// allAnswered reports whether out holds a response for every id.
func allAnswered(out []byte, methods map[string]string) bool {
	for id := range methods {
		if !bytes.Contains(out, []byte(`"id":`+id+`,"result"`)) && !bytes.Contains(out, []byte(`"id":`+id+`,"error"`)) {
			return false
		}
	}
	return true
}

// requestMethods maps the ids of the requests in input (compact JSON) to
// their methods, so responses can be checked against the right result type.
func requestMethods(input []byte) map[string]string {
	out := make(map[string]string)
	for _, line := range bytes.Split(input, []byte("\n")) {
		var m struct {
			ID     json.RawMessage
			Method string
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method == "" {
			continue
		}
		var v any
		if json.Unmarshal(m.ID, &v) != nil {
			continue
		}
		id, _ := json.Marshal(v)
		out[string(id)] = m.Method
	}
	return out
}

var agentSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"sess_fuzz","prompt":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"sess_fuzz","cwd":"/tmp","mcpServers":[]}}`,
	`{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"sess_fuzz","cwd":"/tmp","mcpServers":[]}}`,
	`{"jsonrpc":"2.0","id":4,"method":"session/list","params":{"cwd":"/tmp","cursor":"bogus"}}`,
	`{"jsonrpc":"2.0","id":5,"method":"session/set_config_option","params":{"sessionId":"sess_fuzz","configId":"model","value":42}}`,
	`{"jsonrpc":"2.0","id":6,"method":"session/close","params":{"sessionId":"sess_fuzz"}}`,
	`{"jsonrpc":"2.0","id":7,"method":"session/delete","params":{"sessionId":"nope"}}`,
	`{"jsonrpc":"2.0","id":8,"method":"_crow/compaction/list","params":{"sessionId":"sess_fuzz"}}`,
	`{"jsonrpc":"2.0","id":9,"method":"_crow/compaction/expand","params":{"sessionId":"sess_fuzz","compactionId":-1}}`,
	`{"jsonrpc":"2.0","id":10,"method":"_crow/context/build","params":{"sessionId":"sess_fuzz"}}`,
	`{"jsonrpc":"2.0","id":11,"method":"_crow/debug/stats"}`,
	`{"jsonrpc":"2.0","id":12,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"name":"x","command":"/bin/true","args":[],"env":[]}]}}`,
	`{"jsonrpc":"2.0","id":13,"method":"session/prompt","params":{"sessionId":"sess_fuzz","prompt":[{"type":"resource","resource":{"uri":"file:///a","text":"x"}},{"type":"resource_link","uri":"file:///b","name":"b"}]}}`,
	`{"jsonrpc":"2.0","id":14,"method":"session/prompt","params":{"sessionId":"sess_fuzz","prompt":[{"type":"text","text":"/compact now"}]}}`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_fuzz"}}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","id":15,"method":"session/prompt","params":{"sessionId":"sess_fuzz","prompt":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":16,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"sess_fuzz\",\"prompt\":[{\"type\":\"text\",\"text\":\"\xff\xfe\x00\"}]}}",
	`{"jsonrpc":"2.0","id":17,"method":"_crow/undo","params":{"sessionId":"sess_fuzz","to":-3,"dryRun":true}}`,
	`{"jsonrpc":"2.0","id":18,"method":"_crow/prompts","params":{"sessionId":"sess_fuzz"}}`,
	`{"jsonrpc":"2.0","id":19,"method":"session/prompt","params":{"sessionId":"sess_fuzz","prompt":[{"type":"text","text":"/rewind 99999999999999999999 --force"}]}}`,
	`{"jsonrpc":"2.0","id":20,"method":"session/prompt","params":{"sessionId":"sess_fuzz","prompt":[{"type":"text","text":"/permissions revoke 1 x all"}]}}`,
	strings.Repeat("x", 100),
}
