package secret

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// Issue 37 item 10: frames that hid an MCP server's secret from the mask
// the frame log applies. Each is one the agent reads (or once read) as
// naming the server's credentials; the last ones it refuses, but the frame
// log still records them.
var maskBypasses = map[string]string{
	"duplicate mcpServers (the agent keeps the last)": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[],` +
		`"mcpServers":[{"name":"gh","command":"x","args":[],"env":[{"name":"T","value":"SECRET-dup-servers"}]}]}}`,
	"duplicate params": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]},` +
		`"params":{"cwd":"/p","mcpServers":[{"name":"gh","command":"x","args":[],"env":[{"name":"T","value":"SECRET-dup-params"}]}]}}`,
	"duplicate value": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[{"name":"gh","command":"x","args":[],` +
		`"env":[{"name":"T","value":"","value":"SECRET-dup-value"}]}]}}`,
	"case-variant keys": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","MCPServers":[{"name":"gh","command":"x","args":[],` +
		`"ENV":[{"name":"T","Value":"SECRET-case"}]},{"type":"http","name":"h","url":"https://h/","Headers":[{"name":"A","VALUE":"SECRET-case-hdr"}]}]}}`,
	"a key with the long s (U+017F folds to s)": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpſervers":[{"name":"gh","command":"x","args":[],` +
		`"env":[{"name":"T","value":"SECRET-fold"}]}]}}`,
	"an escaped key": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","\u006dcp\u0053ervers":[{"name":"gh","command":"x","args":[],` +
		`"\u0065nv":[{"name":"T","\u0076alue":"SECRET-escaped"}]}]}}`,
	"a notification": `{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/p","mcpServers":[{"name":"gh","command":"x","args":[],` +
		`"env":[{"name":"T","value":"SECRET-notification"}]}]}}`,
	"another method": `{"jsonrpc":"2.0","id":7,"method":"_crow/anything","params":{"mcpServers":[{"name":"gh","env":[{"name":"T","value":"SECRET-method"}]}]}}`,
	"trailing bytes": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[{"name":"gh","command":"x","args":[],` +
		`"env":[{"name":"T","value":"SECRET-trailing"}]}]}} trailing`,
	"a second object": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` +
		`{"params":{"mcpServers":[{"name":"gh","env":[{"name":"T","value":"SECRET-second"}]}]}}`,
	"garbage before the secret": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p", oops "mcpServers":[{"name":"gh",` +
		`"env":[{"name":"T","value":"SECRET-garbage"}]}]}}`,
	"a control character in the value": "{\"params\":{\"mcpServers\":[{\"name\":\"gh\",\"env\":[{\"name\":\"T\",\"value\":\"SECRET-ctl\x01\"}]}]}}",
	"env as an object":                 `{"params":{"mcpServers":[{"name":"gh","env":{"TOKEN":"SECRET-object"}}]}}`,
	"a number":                         `{"params":{"mcpServers":[{"name":"gh","env":[{"name":"PIN","value":271828182845}]}]}}`,
}

func TestMaskMCPServersBypasses(t *testing.T) {
	for name, frame := range maskBypasses {
		out := MaskMCPServers([]byte(frame))
		for _, s := range []string{"SECRET", "271828182845"} {
			if bytes.Contains(out, []byte(s)) {
				t.Errorf("%s: the masked frame keeps %s: %s", name, s, out)
			}
		}
	}
	// What is not a secret stays as sent, bytes and order.
	frame := `{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/p" , "MCPServers" : [ {"name":"gh","env":[{"Name":"TOKEN", "value" : "s3cr3t"}]}]}}`
	want := `{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/p" , "MCPServers" : [ {"name":"gh","env":[{"Name":"TOKEN", "value" : "[masked]"}]}]}}`
	if got := string(MaskMCPServers([]byte(frame))); got != want {
		t.Errorf("masked:\n%s\nwant:\n%s", got, want)
	}
	for _, plain := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"env value"}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"tell me about MCP servers"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":"\u003cmcpServers\u003e"}}`,
	} {
		if got := MaskMCPServers([]byte(plain)); string(got) != plain {
			t.Errorf("a frame without secrets changed:\n%s\n%s", plain, got)
		}
	}
}

// The fast path: only a frame that could spell "mcpServers" in a key is
// walked.
func TestMayNameMCPServers(t *testing.T) {
	for frame, want := range map[string]bool{
		`{"text":"hello"}`:          false,
		`{"MCPSERVERS":[]}`:         true,
		`{"x":"\u0041"}`:            true,
		`{"mcſervers":[]}`:          false, // not the key: no m-c-p
		"{\"m\xffcpServers\":[]}":   false,
		`{"prompt":"my mcp setup"}`: true,
	} {
		if got := mayNameMCPServers([]byte(frame)); got != want {
			t.Errorf("mayNameMCPServers(%s) = %v", frame, got)
		}
	}
}

// The MCP servers a frame names as the agent decodes them: encoding/json
// on the frame's first value (the agent refuses trailing bytes, but a
// reader that does not is one bug away).
func decodedServers(frame []byte) ([]acp.McpServer, bool) {
	var req struct {
		Params acp.NewSessionRequest `json:"params"`
	}
	if json.NewDecoder(bytes.NewReader(frame)).Decode(&req) != nil {
		return nil, false
	}
	return req.Params.McpServers, true
}

// FuzzMaskMCPServers: whatever the frame, an env or header value the
// agent's decoder would read from it is masked in what the frame log keeps,
// and the masked frame still decodes to the same servers.
func FuzzMaskMCPServers(f *testing.F) {
	for _, frame := range maskBypasses {
		f.Add([]byte(frame))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[{"name":"a\u0000b","env":[{"name":"\u001b[31m","value":"x\u0007"}]}]}}`))
	f.Add([]byte("{\"params\":{\"mcpServers\":[{\"name\":\"\xff\xfe\",\"env\":[{\"name\":\"T\",\"value\":\"\xc3\x28\"}]}]}}"))
	f.Add([]byte(`{"params":{"mcpServers":[{"name":"big","env":[{"name":"T","value":"` + strings.Repeat("A", 1<<20) + `"}]}]}}`))
	f.Add([]byte(`{"params":{"mcpServers":[` + strings.Repeat(`[`, 5000) + `]}}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, frame []byte) {
		out := MaskMCPServers(frame)
		if len(out) > 10*len(frame)+len(Mask) {
			t.Fatalf("masked frame grew from %d to %d bytes", len(frame), len(out))
		}
		in, ok := decodedServers(frame)
		if !ok {
			return
		}
		got, ok := decodedServers(out)
		if !ok || len(got) != len(in) {
			t.Fatalf("the masked frame no longer decodes to its %d servers:\n%q\n%q", len(in), frame, out)
		}
		for i, srv := range got {
			for j, e := range srv.Env {
				if e.Value != "" && e.Value != Mask {
					t.Fatalf("env value %q kept:\n%q\n%q", e.Value, frame, out)
				}
				if e.Name != in[i].Env[j].Name {
					t.Fatalf("env name %q changed to %q", in[i].Env[j].Name, e.Name)
				}
			}
			for _, h := range srv.Headers {
				if h.Value != "" && h.Value != Mask {
					t.Fatalf("header value %q kept:\n%q\n%q", h.Value, frame, out)
				}
			}
		}
	})
}
