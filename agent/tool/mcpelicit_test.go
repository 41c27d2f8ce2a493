package tool

import (
	"context"
	"encoding/json"
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
// them and only for an http(s) URL; the server's completion reaches the
// client for an id that was shown, never for another.
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
	for _, bad := range []string{"javascript:alert(1)", "https://x.example/a b", "https://x.example/\x1b[2J", "file:///etc/passwd"} {
		done := a.during(context.Background(), env, "c1")
		if res, _ := a.elicit(context.Background(), urlReq("e1", bad)); res.Action != acp.ElicitCancel {
			t.Errorf("%q was passed on", bad)
		}
		done()
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
