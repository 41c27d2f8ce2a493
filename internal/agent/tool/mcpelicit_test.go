package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crow-acp/crow-acp/acp"
)

// TestMCPAskerBounds: a server's question reaches the user only while one
// of its tool calls runs, tied to that call and naming the server, at most
// MaxMCPQuestionsPerCall times per call; the rest are answered "cancel"
// without asking anyone.
func TestMCPAskerBounds(t *testing.T) {
	var asked []*acp.CreateElicitationRequest
	env := &Env{SessionID: "s", Elicit: func(_ context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
		asked = append(asked, req)
		return &acp.CreateElicitationResponse{Action: acp.ElicitAccept, Content: map[string]json.RawMessage{
			"colour": json.RawMessage(`"red"`), "injected": json.RawMessage(`1`)}}, nil
	}}
	a := &mcpAsker{server: "notes"}
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Which?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string", "enum": []string{"red", "green"}}}}}}
	ctx := context.Background()

	if res, _ := a.elicit(ctx, req); res.Action != acp.ElicitCancel || len(asked) != 0 {
		t.Fatalf("outside a tool call: %+v, %d asked", res, len(asked))
	}
	done := a.during(ctx, env, "call_7")
	for i := range MaxMCPQuestionsPerCall + 1 {
		res, err := a.elicit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want := acp.ElicitAccept
		if i == MaxMCPQuestionsPerCall {
			want = acp.ElicitCancel
		}
		if res.Action != want {
			t.Fatalf("question %d: %s, want %s", i+1, res.Action, want)
		}
		if want == acp.ElicitAccept && (res.Content["colour"] != "red" || res.Content["injected"] != nil) {
			t.Fatalf("content %v", res.Content)
		}
	}
	done()
	if len(asked) != MaxMCPQuestionsPerCall || asked[0].ToolCallID != "call_7" || asked[0].Message != `MCP server "notes" asks: Which?` {
		t.Fatalf("asked %d, first %+v", len(asked), asked[0])
	}
	if res, _ := a.elicit(ctx, req); res.Action != acp.ElicitCancel {
		t.Fatalf("after the call: %+v", res)
	}
}

// TestMCPAskerFallback: without forms, a one-choice form is a permission
// request; a form of two fields cannot be asked and is cancelled.
func TestMCPAskerFallback(t *testing.T) {
	perm := &permClient{}
	env := &Env{SessionID: "s", Client: perm}
	a := &mcpAsker{server: "srv"}
	defer a.during(context.Background(), env, "c1")()
	one := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Go?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}}
	res, _ := a.elicit(context.Background(), one)
	if res.Action != acp.ElicitAccept || res.Content["ok"] != true || perm.n != 1 {
		t.Fatalf("one choice: %+v (%d permission requests)", res, perm.n)
	}
	two := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Who?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}, "b": map[string]any{"type": "string"}}}}}
	if res, _ := a.elicit(context.Background(), two); res.Action != acp.ElicitCancel || perm.n != 1 {
		t.Fatalf("two fields: %+v", res)
	}
}

// permClient picks the first option of every permission request.
type permClient struct {
	acp.UnimplementedClient
	n int
}

func (p *permClient) RequestPermission(_ context.Context, r *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	p.n++
	return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: "selected", OptionID: r.Options[0].OptionID}}, nil
}

// TestMCPAskerURL: a URL elicitation goes on only to a client that takes
// them and only for a URL that shows where it goes (else it is declined and
// the model told why); the server's completion reaches the client for an
// id that was shown, never for another.
func TestMCPAskerURL(t *testing.T) {
	var shown []string
	var completed []string
	env := &Env{SessionID: "s",
		ElicitURL: func(_ context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
			shown = append(shown, req.URL)
			return &acp.CreateElicitationResponse{Action: acp.ElicitAccept}, nil
		},
		CompleteElicitation: func(_ context.Context, n *acp.CompleteElicitationNotification) error {
			completed = append(completed, n.ElicitationID)
			return nil
		}}
	a := &mcpAsker{server: "srv"}
	urlReq := func(id, u string) *mcp.ElicitRequest {
		return &mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: u, ElicitationID: id}}
	}
	for _, bad := range []string{"javascript:alert(1)", "https://x.example/a b", "https://x.example/\x1b[2J", "file:///etc/passwd",
		"https://github.com@evil.example/", "http://x.example/login"} {
		done := a.during(context.Background(), env, "c1")
		if res, _ := a.elicit(context.Background(), urlReq("e1", bad)); res.Action != acp.ElicitDecline {
			t.Errorf("%q was passed on", bad)
		}
		if notes := done(); len(notes) != 1 || !strings.Contains(notes[0], "declined") {
			t.Errorf("%q: the model is not told why: %q", bad, notes)
		}
	}
	defer a.during(context.Background(), env, "c2")()
	if res, _ := a.elicit(context.Background(), urlReq("e2", "https://x.example/login")); res.Action != acp.ElicitAccept {
		t.Errorf("an https URL was not passed on: %+v", res)
	}
	for _, id := range []string{"other", "e1", "e2", "e2"} {
		a.complete(context.Background(), &mcp.ElicitationCompleteNotificationRequest{Params: &mcp.ElicitationCompleteParams{ElicitationID: id}})
	}
	if len(shown) != 1 || len(completed) != 1 || completed[0] != "e2" {
		t.Errorf("shown %v, completed %v", shown, completed)
	}
	env.ElicitURL = nil
	if res, _ := a.elicit(context.Background(), urlReq("e3", "https://x.example/login")); res.Action != acp.ElicitCancel || len(shown) != 1 {
		t.Errorf("passed on to a client without elicitation.url")
	}
}

// Issue 37 item 10: URL elicitations that dress a page on one host as
// another's are refused; the host of one passed on is what the user sees.
func TestCheckElicitURL(t *testing.T) {
	for u, want := range map[string]string{
		"https://notes.example/login?s=1":                                 "notes.example",
		"https://notes.example:8443/":                                     "notes.example:8443",
		"http://127.0.0.1:8080/callback":                                  "127.0.0.1:8080",
		"http://localhost/cb":                                             "localhost",
		"http://[::1]:9/cb":                                               "[::1]:9",
		"https://github.com@evil.example/":                                "",
		"https://user:pw@notes.example/":                                  "",
		"http://notes.example/login":                                      "",
		"http://127.0.0.1.evil.example/":                                  "",
		"https://xn--pple-43d.com/":                                       "",
		"https://login.XN--pple-43d.com/":                                 "",
		"https://аpple.com/":                                              "",
		"https://github.com%2eevil.example/":                              "",
		"https://%67ithub.com/":                                           "",
		"https://notes.example/" + strings.Repeat("a", maxElicitURLBytes): "",
	} {
		host, why := checkElicitURL(u)
		if host != want || (want == "") != (why != "") {
			t.Errorf("checkElicitURL(%q) = %q, %q; want host %q", u, host, why, want)
		}
	}
}

// A field's pattern is kept for the client, and one Go's regexp cannot
// compile refuses the form before anyone is asked.
func TestParseElicitSchemaPattern(t *testing.T) {
	s, err := ParseElicitSchema([]byte(`{"properties":{"code":{"type":"string","pattern":"^[A-Z]{3}-[0-9]+$"}}}`))
	if err != nil || s.Properties["code"].Pattern != "^[A-Z]{3}-[0-9]+$" {
		t.Fatalf("pattern not kept: %+v, %v", s, err)
	}
	if _, err := ParseElicitSchema([]byte(`{"properties":{"pw":{"type":"string","pattern":"^(?=.*[0-9]).{8,}$"}}}`)); err == nil ||
		!strings.Contains(err.Error(), "RE2") {
		t.Fatalf("a lookahead pattern was accepted: %v", err)
	}
}

// An answer that never matches the field's pattern is asked again
// maxPatternRetries times, each time holding the last answer, then refused
// with an error for the server and a note for the model: never sent, never
// silently dropped.
func TestMCPAskerPatternRetries(t *testing.T) {
	var asked []*acp.CreateElicitationRequest
	env := &Env{SessionID: "s", Elicit: func(_ context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
		asked = append(asked, req)
		return &acp.CreateElicitationResponse{Action: acp.ElicitAccept, Content: map[string]json.RawMessage{
			"code": mustJSON("try " + strings.Repeat("x", len(asked)))}}, nil
	}}
	a := &mcpAsker{server: "notes"}
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Code?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"code": map[string]any{"type": "string", "pattern": "^[0-9]+$"}}}}}
	done := a.during(context.Background(), env, "call_1")
	res, err := a.elicit(context.Background(), req)
	notes := done()
	if res != nil || err == nil || !strings.Contains(err.Error(), `"^[0-9]+$"`) {
		t.Fatalf("never matching: %+v, %v", res, err)
	}
	if len(asked) != maxPatternRetries+1 || len(notes) != 1 || !strings.Contains(notes[0], "sent none") {
		t.Fatalf("asked %d times, notes %q", len(asked), notes)
	}
	last := asked[len(asked)-1]
	if !strings.Contains(last.Message, "^[0-9]+$") || string(last.RequestedSchema.Properties["code"].Default) != `"try xx"` {
		t.Fatalf("the question asked again: %q, default %s", last.Message, last.RequestedSchema.Properties["code"].Default)
	}
}
