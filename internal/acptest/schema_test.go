package acptest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// methods maps ids to request methods, as a harness would.
func methods(m map[string]string) func(json.RawMessage) string {
	return func(id json.RawMessage) string { return m[string(id)] }
}

var sent = methods(map[string]string{
	`0`:       "initialize",
	`1`:       "session/new",
	`2`:       "session/prompt",
	`"x"`:     "session/load",
	`3`:       "_crow/debug",
	`4`:       "session/set_model",
	`5`:       "fs/read_text_file", // a client method: the agent never answers it
	`"perm1"`: "session/request_permission",
})

func TestAgentFramesValid(t *testing.T) {
	v := MustValidator(t)
	frames := []string{
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true}},"authMethods":[],"agentInfo":{"name":"crow-acp","version":"0.1.0"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess_1"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"anything":[1,2]}}`,
		`{"jsonrpc":"2.0","id":99,"result":{"whatever":true}}`, // unknown id: envelope only
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"model failed","data":{"message":"boom"}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read a.go","kind":"read","status":"pending","locations":[{"path":"/a.go","line":3}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.0123,"currency":"USD"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","content":[{"type":"diff","path":"/a.go","oldText":null,"newText":"x"},{"type":"content","content":{"type":"text","text":"ok"}},{"type":"terminal","terminalId":"term1"}],"rawOutput":{"any":"thing"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"step","priority":"high","status":"in_progress"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"session_info_update","title":"T","updatedAt":null}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"resource_link","uri":"file:///a.go","name":"a.go"},"messageId":"m1"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"}]},"configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"m1","options":[{"value":"m1","name":"M1"}]}]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"terminal/create","params":{"sessionId":"s","command":"go","args":["test"],"env":[{"name":"A","value":"b"}],"cwd":"/w","outputByteLimit":1048576}}`,
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a.go","line":1,"limit":10}}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}`,
		`{"jsonrpc":"2.0","method":"_crow/notice","params":{"x":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"_crow/ask"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s\"}}\n",
	}
	for _, f := range frames {
		if err := v.ValidateAgentFrame([]byte(f), sent); err != nil {
			t.Errorf("valid frame rejected:\n%v", err)
		}
	}
}

func TestAgentFramesInvalid(t *testing.T) {
	v := MustValidator(t)
	tests := []struct {
		name, frame string
		def, ptr    string // expected Violation.Def and .Pointer
		detail      string // substring of the details
	}{
		{"protocolVersion string",
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1","agentCapabilities":{},"authMethods":[]}}`,
			"InitializeResponse", "/result/protocolVersion", "got string, want integer"},
		{"protocolVersion out of uint16",
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":70000}}`,
			"InitializeResponse", "/result/protocolVersion", "out of range for uint16"},
		{"unknown sessionUpdate",
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"banana","content":{"type":"text","text":"hi"}}}}`,
			"SessionNotification", "/params/update/sessionUpdate", `"agent_message_chunk"`},
		{"content block missing text",
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}}`,
			"SessionNotification", "/params/update/content", `missing property 'text'`},
		{"request_permission without options",
			`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t1"}}}`,
			"RequestPermissionRequest", "/params", `missing property 'options'`},
		{"stopReason banana",
			`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"banana"}}`,
			"PromptResponse", "/result/stopReason", `"end_turn"`},
		{"load result null",
			`{"jsonrpc":"2.0","id":"x","result":null}`,
			"LoadSessionResponse", "/result", "want object"},
		{"new session without id",
			`{"jsonrpc":"2.0","id":1,"result":{}}`,
			"NewSessionResponse", "/result", `missing property 'sessionId'`},
		{"error code string",
			`{"jsonrpc":"2.0","id":2,"error":{"code":"oops","message":"x"}}`,
			"Error", "/error/code", "want integer"},
		{"notification without params",
			`{"jsonrpc":"2.0","method":"session/update"}`,
			"SessionNotification", "/params", "want object"},
		{"unknown method",
			`{"jsonrpc":"2.0","id":3,"method":"session/frobnicate","params":{}}`,
			"JSON-RPC", "/method", "not a request"},
		{"wrong direction",
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
			"JSON-RPC", "/method", "not a notification the agent may send"},
		{"response to removed method",
			`{"jsonrpc":"2.0","id":4,"result":{}}`,
			"JSON-RPC", "/result", "session/set_model"},
		{"result for a client method",
			`{"jsonrpc":"2.0","id":5,"result":{"content":"x"}}`,
			"JSON-RPC", "/result", "fs/read_text_file"},
		{"missing jsonrpc", `{"id":1,"result":{"sessionId":"s"}}`, "JSON-RPC", "/jsonrpc", "2.0"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"result":{"sessionId":"s"}}`, "JSON-RPC", "/jsonrpc", "2.0"},
		{"array", `[{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}]`, "JSON-RPC", "", "not a JSON object"},
		{"two objects", `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}{}`, "JSON-RPC", "", "not a single JSON object"},
		{"garbage", `hello`, "JSON-RPC", "", "not a JSON object"},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, "JSON-RPC", "", "exactly one"},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, "JSON-RPC", "", "id"},
		{"extra member", `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"},"extra":1}`, "JSON-RPC", "/extra", "unexpected member"},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"result":{}}`, "root", "/id", "want null or integer or string"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"\xff\"}}", "JSON-RPC", "", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.ValidateAgentFrame([]byte(tt.frame), sent)
			if err == nil {
				t.Fatalf("invalid frame accepted: %s", tt.frame)
			}
			var viol *Violation
			if !errors.As(err, &viol) {
				t.Fatalf("error is %T, want *Violation: %v", err, err)
			}
			if viol.Def != tt.def || viol.Pointer != tt.ptr || viol.From != "agent" {
				t.Errorf("got def %q pointer %q from %q, want %q %q agent\n%v", viol.Def, viol.Pointer, viol.From, tt.def, tt.ptr, err)
			}
			if !strings.Contains(strings.Join(viol.Details, "\n"), tt.detail) {
				t.Errorf("details do not mention %q:\n%v", tt.detail, err)
			}
			if !strings.Contains(err.Error(), "frame: ") || len(viol.Details) > maxDetails+1 {
				t.Errorf("error should name the frame and stay short:\n%v", err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestClientFrames(t *testing.T) {
	v := MustValidator(t)
	agentSent := methods(map[string]string{`0`: "session/request_permission", `1`: "fs/read_text_file"})
	valid := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp/x","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":"package a"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"not found"}}`,
	}
	for _, f := range valid {
		if err := v.ValidateClientFrame([]byte(f), agentSent); err != nil {
			t.Errorf("valid client frame rejected:\n%v", err)
		}
	}
	invalid := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp/x"}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"maybe"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}`,
	}
	for _, f := range invalid {
		err := v.ValidateClientFrame([]byte(f), agentSent)
		if err == nil {
			t.Errorf("invalid client frame accepted: %s", f)
			continue
		}
		if viol := new(Violation); !errors.As(err, &viol) || viol.From != "client" {
			t.Errorf("want a client *Violation, got %v", err)
		}
	}
}

func TestSDKSchema(t *testing.T) {
	v, err := NewValidator(SchemaFile(SDKSchema))
	if err != nil {
		t.Fatal(err)
	}
	// notice is stable in the SDK 2.4.0 schema.
	f := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"notice","severity":"info","title":"compacted"}}}`
	if err := v.ValidateAgentFrame([]byte(f), nil); err != nil {
		t.Errorf("SDK schema rejected a notice: %v", err)
	}
	if err := MustValidator(t).ValidateAgentFrame([]byte(f), nil); err == nil {
		t.Errorf("stable schema accepted a notice update")
	}
}

func TestSchemaFile(t *testing.T) {
	p := SchemaFile(StableSchema)
	if !strings.HasSuffix(p, "testdata/acp/schema.json") || !isModuleRoot(repoRoot()) {
		t.Fatalf("SchemaFile = %s, root %s", p, repoRoot())
	}
	if _, err := NewValidator("does/not/exist.json"); err == nil {
		t.Fatal("NewValidator accepted a missing file")
	}
}
