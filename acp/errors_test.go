package acp

import (
	"encoding/json"
	"testing"

	"github.com/crow-acp/crow-acp/internal/acptest"
)

// Zed shows error.message to the user, so a params error names the JSON
// field and kinds the client sent, not Go's types.
func TestParamsErrorSpeaksJSON(t *testing.T) {
	cases := []struct {
		params string
		want   string
	}{
		{`{"sessionId":["s"],"prompt":[]}`, "Invalid params: sessionId must be a string, not an array."},
		{`{"sessionId":"s","prompt":"hello"}`, "Invalid params: prompt must be an array, not a string."},
		{`{"sessionId":7,"prompt":[]}`, "Invalid params: sessionId must be a string, not a number."},
		{`"s"`, "Invalid params: expected a JSON object."},
	}
	for _, c := range cases {
		err := decodeParams(json.RawMessage(c.params), new(PromptRequest))
		e, ok := err.(*Error)
		if !ok || e.Code != CodeInvalidParams {
			t.Fatalf("%s: got %v, want a -32602 error", c.params, err)
		}
		if e.Message != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.params, e.Message, c.want)
		}
	}
}

// Every error this package writes itself reads as a sentence in Zed.
func TestWireErrorsAreSentences(t *testing.T) {
	errs := []error{
		MissingParam("sessionId", "pass the id that session/new or session/load returned"),
		MethodNotFound("session/fly"),
		ParamsError(&json.SyntaxError{}),
		ParamsError(json.Unmarshal([]byte(`{"a":1`), new(map[string]any))),
		wireErrorOf(t, errString("open /x: permission denied")),
		wireErrorOf(t, errString("")),
	}
	for _, err := range errs {
		frame, mErr := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": wireError(err)})
		if mErr != nil {
			t.Fatal(mErr)
		}
		if why := acptest.ReadableError(frame); why != nil {
			t.Errorf("%v", why)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func wireErrorOf(t *testing.T, err error) error {
	t.Helper()
	w := wireError(err)
	return &Error{Code: int(w.Code), Message: w.Message}
}
