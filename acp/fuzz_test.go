package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

// fuzzMaxLine is small so that the fuzzer reaches the oversized-line path.
const fuzzMaxLine = 256

// FuzzLineStream feeds arbitrary bytes to the line stream. Every line that
// is neither blank nor over the cap must produce exactly one outcome: a
// message handed to jsonrpc2 or one error frame; oversized lines exactly one
// error frame. Every frame written is a JSON-RPC 2.0 error response.
func FuzzLineStream(f *testing.F) {
	for _, s := range lineSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		s := NewLineStream(bytes.NewReader(in), &out, fuzzMaxLine, nil)
		objects := 0
		for {
			var msg json.RawMessage
			err := s.ReadObject(&msg)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("ReadObject: %v", err)
			}
			objects++
			checkHandedOn(t, s, msg)
		}
		frames := splitFrames(t, out.Bytes())
		for _, fr := range frames {
			code := frameErrorCode(t, fr)
			if code != CodeParseError && code != CodeInvalidRequest {
				t.Fatalf("line stream answered with code %d: %s", code, fr)
			}
		}
		if want := expectedOutcomes(in, fuzzMaxLine); objects+len(frames) != want {
			t.Fatalf("%d messages + %d error frames for %d non-blank lines\ninput %q\noutput %s",
				objects, len(frames), want, in, out.Bytes())
		}
	})
}

// checkHandedOn checks a message passed to jsonrpc2: a request with an
// internal numeric id that maps back to a valid client id, a notification,
// or a response.
func checkHandedOn(t *testing.T, s *LineStream, msg json.RawMessage) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("handed on a non-object %q: %v", msg, err)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		t.Fatalf("handed on a message without jsonrpc 2.0: %s", msg)
	}
	id, hasID := m["id"]
	if _, isReq := m["method"]; !isReq || !hasID {
		return
	}
	var n uint64
	if err := json.Unmarshal(id, &n); err != nil {
		t.Fatalf("request id not translated to an internal number: %s", msg)
	}
	if orig := s.takeID(jsonrpcID(n)); !validID(orig) {
		t.Fatalf("internal id %d maps back to invalid id %q", n, orig)
	}
}

// expectedOutcomes counts the lines the stream must answer or hand on.
func expectedOutcomes(in []byte, maxLine int) int {
	n := 0
	lines := bytes.Split(in, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // input ended with '\n'
	}
	for _, l := range lines {
		if len(l) > maxLine || len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

func splitFrames(t *testing.T, out []byte) [][]byte {
	t.Helper()
	if len(out) == 0 {
		return nil
	}
	if out[len(out)-1] != '\n' {
		t.Fatalf("output does not end with a newline: %q", out)
	}
	frames := bytes.Split(out[:len(out)-1], []byte("\n"))
	for _, fr := range frames {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(fr, &m); err != nil {
			t.Fatalf("wrote a frame that is not a JSON object %q: %v", fr, err)
		}
		if string(m["jsonrpc"]) != `"2.0"` {
			t.Fatalf("frame without jsonrpc 2.0: %s", fr)
		}
	}
	return frames
}

// frameErrorCode returns the error code of a response frame, or 0 for a
// success response; it fails on anything that is not a response.
func frameErrorCode(t *testing.T, fr []byte) int {
	t.Helper()
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(fr, &m); err != nil {
		t.Fatalf("bad frame %s: %v", fr, err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(fr, &keys); err != nil || keys["id"] == nil {
		t.Fatalf("response without id: %s", fr)
	}
	if (m.Error == nil) == (m.Result == nil) {
		t.Fatalf("response must carry exactly one of result and error: %s", fr)
	}
	if m.Error == nil {
		return 0
	}
	if m.Error.Message == "" {
		t.Fatalf("error without a message: %s", fr)
	}
	return m.Error.Code
}

// stubAgent answers every baseline method at once and never calls the
// client, so any input can be dispatched without a client on the other end.
type stubAgent struct{}

func (stubAgent) Initialize(_ context.Context, r *InitializeRequest) (*InitializeResponse, error) {
	return &InitializeResponse{ProtocolVersion: ProtocolVersion}, nil
}
func (stubAgent) Authenticate(context.Context, *AuthenticateRequest) (*AuthenticateResponse, error) {
	return nil, nil
}
func (stubAgent) NewSession(context.Context, *NewSessionRequest) (*NewSessionResponse, error) {
	return &NewSessionResponse{SessionID: "s1"}, nil
}
func (stubAgent) Prompt(_ context.Context, r *PromptRequest) (*PromptResponse, error) {
	if r.SessionID != "s1" {
		return nil, ResourceNotFound("unknown session %q", r.SessionID)
	}
	return &PromptResponse{StopReason: StopEndTurn}, nil
}
func (stubAgent) Cancel(context.Context, *CancelNotification) error { return nil }
func (stubAgent) LoadSession(_ context.Context, r *LoadSessionRequest) (*LoadSessionResponse, error) {
	return nil, ResourceNotFound("unknown session %q", r.SessionID)
}

// probe is sent after the fuzz input: the connection must still answer it.
const probe = `{"jsonrpc":"2.0","id":"fuzz-probe-7f3a","method":"initialize","params":{"protocolVersion":1}}`

// FuzzDispatch runs arbitrary input through a whole connection (line
// stream, jsonrpc2, dispatch table, param decoding) and then one good
// request. Every frame must be a well-formed response with a known code,
// there are never more responses than lines, and the good request is
// answered: bad input never stops the server.
func FuzzDispatch(f *testing.F) {
	for _, s := range lineSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		input := append(append(append([]byte(nil), in...), '\n'), probe...)
		input = append(input, '\n')
		var out syncbuf.Buffer // written by the Conn's writers
		conn := NewConn(bytes.NewReader(input), &out, Options{MaxLineBytes: 4096})
		done := make(chan error, 1)
		go func() { done <- conn.Serve(context.Background(), stubAgent{}) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Serve did not return after the input ended; input %q", in)
		}
		frames := splitFrames(t, out.Bytes())
		if lines := expectedOutcomes(input, 4096); len(frames) > lines {
			t.Fatalf("%d frames for %d lines", len(frames), lines)
		}
		answered := false
		for _, fr := range frames {
			switch code := frameErrorCode(t, fr); code {
			case 0, CodeParseError, CodeInvalidRequest, CodeMethodNotFound, CodeInvalidParams,
				CodeResourceNotFound, CodeRequestCancelled:
			default:
				t.Fatalf("unexpected error code %d: %s", code, fr)
			}
			if bytes.Contains(fr, []byte(`"id":"fuzz-probe-7f3a","result"`)) {
				answered = true
			}
		}
		if !answered {
			t.Fatalf("the request after the fuzz input was not answered\ninput %q\noutput %s", in, out.Bytes())
		}
	})
}

// lineSeeds are the interesting shapes of client input; the corpus in
// testdata/fuzz adds the crashers and oddities found so far.
var lineSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":"a","method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`,
	`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}`,
	`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"x","cwd":"/","mcpServers":[]}}`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}`,
	`{"jsonrpc":"2.0","method":"unknown/notification"}`,
	`{"jsonrpc":"2.0","id":5,"method":"unknown/method"}`,
	`{"jsonrpc":"2.0","id":6,"method":"_ext/method","params":{}}`,
	`{"jsonrpc":"2.0","id":77,"result":{}}`,
	`{"jsonrpc":"2.0","id":"zz","error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":42}}`,
	`{"jsonrpc":"2.0","id":8,"method":"session/new","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"prompt":[{"type":"video"}]}}`,
	`{"jsonrpc":"2.0","id":null,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":1.5e300,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`,
	`{"jsonrpc":"1.0","id":1,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":1,"method":"","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","result":1}`,
	`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize",`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"x\":\"\xff\xfe\"}}",
	"\xff\xfe\xfd",
	"\r\n\r\n  \n",
	strings.Repeat("[", 300),
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":` + strings.Repeat(`{"a":`, 60) + `1` + strings.Repeat(`}`, 60) + `}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 300) + `"}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}",
	`null`, `1`, `"s"`, `{}`, `{"id":1}`,
}

func jsonrpcID(n uint64) jsonrpc2.ID { return jsonrpc2.ID{Num: n} }
