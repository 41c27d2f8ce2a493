package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestElicitationNotAdvertised: elicitation/create in a mode the client did
// not advertise is refused (-32601) and nothing is written.
func TestElicitationNotAdvertised(t *testing.T) {
	var out bytes.Buffer
	c := NewConn(strings.NewReader(""), &out, Options{})
	form := &CreateElicitationRequest{Mode: ElicitForm, SessionID: "s", Message: "q",
		RequestedSchema: &ElicitationSchema{Type: "object", Properties: map[string]ElicitationProperty{"a": {Type: "string"}}}}
	check := func(req *CreateElicitationRequest, want string) {
		t.Helper()
		_, err := c.CreateElicitation(context.Background(), req)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeMethodNotFound || !strings.Contains(e.Message, want) {
			t.Errorf("error %v, want -32601 naming %s", err, want)
		}
	}
	check(form, "elicitation.form")
	c.noteInitialize(json.RawMessage(`{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}`))
	check(&CreateElicitationRequest{Mode: ElicitURL, SessionID: "s", Message: "m", ElicitationID: "e", URL: "https://x"}, "elicitation.url")
	if err := c.CompleteElicitation(context.Background(), &CompleteElicitationNotification{ElicitationID: "e"}); err == nil {
		t.Error("elicitation/complete sent to a client without elicitation.url")
	}
	if !c.ClientCapabilities().ElicitsForm() || c.ClientCapabilities().ElicitsURL() {
		t.Errorf("capabilities read as %+v", c.ClientCapabilities().Elicitation)
	}
	if out.Len() != 0 {
		t.Errorf("written: %q", out.String())
	}
}
