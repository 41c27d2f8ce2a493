package terminal

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// askQuestion is ask_user's form for "Which database?" with two choices.
func askQuestion(message string) *acp.CreateElicitationRequest {
	return &acp.CreateElicitationRequest{Mode: acp.ElicitForm, SessionID: "s", ToolCallID: "c", Message: message,
		RequestedSchema: &acp.ElicitationSchema{Type: "object", Properties: map[string]acp.ElicitationProperty{
			"answer": {Type: "string", Title: "Answer", OneOf: []acp.EnumOption{{Const: "SQLite", Title: "SQLite"}, {Const: "PostgreSQL", Title: "Postgre\x1b[2KSQL"}}},
			"other":  {Type: "string", Title: "Other", Description: "Or answer in your own words (optional)."},
		}}}
}

func elicitAt(t *testing.T, input string, tty bool, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, string) {
	t.Helper()
	var errb bytes.Buffer
	ui := New(strings.NewReader(input), io.Discard, &errb, Options{Yes: true})
	ui.inTTY = tty
	res, err := ui.CreateElicitation(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res, errb.String()
}

// TestElicitNumberedChoice: the person answers by number (after a wrong
// one), skips the optional field; the model's escapes are shown, not run.
func TestElicitNumberedChoice(t *testing.T) {
	res, shown := elicitAt(t, "7\n2\n\n", true, askQuestion("Which \x1b]0;pwned\x07database?\nline two"))
	if res.Action != acp.ElicitAccept || string(res.Content["answer"]) != `"PostgreSQL"` || res.Content["other"] != nil {
		t.Fatalf("answer %+v", res)
	}
	if strings.ContainsRune(shown, '\x1b') || strings.ContainsRune(shown, '\x07') {
		t.Errorf("a raw escape reached the terminal:\n%q", shown)
	}
	for _, want := range []string{"? Which ^[]0;pwned^Gdatabase?", "│ line two", "  2) Postgre^[[2KSQL", "Answer (1-2, or empty to skip): ", "Other — Or answer in your own words (optional). (or empty to skip): "} {
		if !strings.Contains(shown, want) {
			t.Errorf("missing %q in:\n%s", want, shown)
		}
	}
}

// TestElicitWithoutTerminal: nobody can answer; --yes does not answer
// questions; the agent is told the user declined, and the person why.
func TestElicitWithoutTerminal(t *testing.T) {
	res, shown := elicitAt(t, "1\n", false, askQuestion("Which database?"))
	if res.Action != acp.ElicitDecline || !strings.Contains(shown, "exec cannot ask without a terminal") {
		t.Fatalf("answer %+v, shown %q", res, shown)
	}
}

// TestElicitEOF: stdin ends before an answer: the question is cancelled.
func TestElicitEOF(t *testing.T) {
	req := askQuestion("q")
	req.RequestedSchema.Required = []string{"answer"}
	if res, _ := elicitAt(t, "\n", true, req); res.Action != acp.ElicitCancel {
		t.Fatalf("answer %+v", res)
	}
}

func TestElicitTypes(t *testing.T) {
	req := &acp.CreateElicitationRequest{Mode: acp.ElicitForm, Message: "m", RequestedSchema: &acp.ElicitationSchema{Type: "object",
		Properties: map[string]acp.ElicitationProperty{
			"a_ok":   {Type: "boolean"},
			"b_n":    {Type: "integer"},
			"c_tags": {Type: "array", Items: &acp.MultiSelectItems{Type: "string", Enum: []string{"x", "y", "z"}}},
			"d_text": {Type: "string"},
		}, Required: []string{"a_ok", "b_n", "c_tags", "d_text"}}}
	res, _ := elicitAt(t, "maybe\ny\n1.5\n3\n1,3\nhello there\n", true, req)
	want := map[string]string{"a_ok": "true", "b_n": "3", "c_tags": `["x","z"]`, "d_text": `"hello there"`}
	for k, v := range want {
		if string(res.Content[k]) != v {
			t.Errorf("%s = %s, want %s", k, res.Content[k], v)
		}
	}
}
