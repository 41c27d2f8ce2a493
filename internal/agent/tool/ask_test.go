package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/acptest"
)

// validators are the stable schema the fixtures use and the newest, SDK
// 2.4's, where elicitation is stable too.
func validators(tb testing.TB) []*acptest.Validator {
	tb.Helper()
	sdk, err := acptest.NewValidator(acptest.SchemaFile("sdk-2.4.0/v1/schema.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return []*acptest.Validator{acptest.MustValidator(tb), sdk}
}

// askFrame is req as the agent writes it, for the schema check.
func askFrame(t testing.TB, req *acp.CreateElicitationRequest) []byte {
	params, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":` + string(params) + "}\n")
}

func TestAskUserBounds(t *testing.T) {
	many := make([]string, MaxChoices+1)
	for i := range many {
		many[i] = strings.Repeat("x", i+1)
	}
	for _, tc := range []struct {
		name string
		args askArgs
		want string
	}{
		{"empty", askArgs{Question: " \n"}, "question is empty"},
		{"huge question", askArgs{Question: strings.Repeat("q", MaxQuestionBytes+1)}, "keep it under"},
		{"too many choices", askArgs{Question: "q", Choices: many}, "give at most"},
		{"huge choice", askArgs{Question: "q", Choices: []string{strings.Repeat("c", MaxChoiceBytes+1)}}, "keep each under"},
		{"empty choice", askArgs{Question: "q", Choices: []string{"a", " "}}, "choices[1] is empty"},
		{"twice", askArgs{Question: "q", Choices: []string{"a", "a"}}, "given twice"},
	} {
		raw, _ := json.Marshal(tc.args)
		_, err := askUser{}.Prepare(&Env{}, raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestAskTimeout: a question nobody answers is withdrawn after
// QuestionTimeout and the model is told; the client's request context ends.
func TestAskTimeout(t *testing.T) {
	withdrawn := make(chan struct{})
	env := &Env{SessionID: "s", CallID: "call_1", QuestionTimeout: 20 * time.Millisecond,
		Elicit: func(ctx context.Context, _ *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
			<-ctx.Done()
			close(withdrawn)
			return nil, ctx.Err()
		}}
	act, err := askUser{}.Prepare(env, json.RawMessage(`{"question":"Which?","choices":["a","b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res := act.Run(context.Background(), nil)
	<-withdrawn
	if !res.Failed || !strings.Contains(res.Output, "did not answer within 20ms") {
		t.Fatalf("result %+v", res)
	}
}

// TestAskFrameValid: the form ask_user sends is valid against the SDK 2.4
// schema, with and without choices, with hostile text.
func TestAskFrameValid(t *testing.T) {
	vs := validators(t)
	for _, a := range []askArgs{
		{Question: "Free text?"},
		{Question: "Pick \x1b[31mone\x00\xff", Choices: []string{"a\x07", "b"}},
	} {
		q, err := newQuestion(a)
		if err != nil {
			t.Fatal(err)
		}
		req := &acp.CreateElicitationRequest{Mode: acp.ElicitForm, SessionID: "s", ToolCallID: "c", Message: q.Message, RequestedSchema: q.Schema}
		for _, v := range vs {
			if err := v.ValidateAgentFrame(askFrame(t, req), nil); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestAskClientGone: a client that goes away while asked cancels the
// question (it is not reported as a failure to ask).
func TestAskClientGone(t *testing.T) {
	env := &Env{SessionID: "s", Elicit: func(context.Context, *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
		return nil, acp.ErrClientGone
	}}
	q, _ := newQuestion(askArgs{Question: "q"})
	if ans := Ask(context.Background(), env, "c", q); !ans.Cancelled {
		t.Fatalf("answer %+v, want cancelled", ans)
	}
	env.Elicit = func(context.Context, *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
		return nil, errors.New("boom")
	}
	if ans := Ask(context.Background(), env, "c", q); ans.Err == nil {
		t.Fatalf("answer %+v, want the error", ans)
	}
}

func TestAskAnswerBounded(t *testing.T) {
	q, _ := newQuestion(askArgs{Question: "q"})
	huge := strings.Repeat("é", MaxAnswerBytes)
	res := q.result(askArgs{Question: "q"}, Answer{Action: acp.ElicitAccept, Content: map[string]json.RawMessage{answerField: mustJSON(huge)}})
	if len(res.Output) > MaxAnswerBytes+200 || !strings.Contains(res.Output, "more bytes of the answer not shown") {
		t.Fatalf("output of %d bytes", len(res.Output))
	}
}

func TestParseElicitSchema(t *testing.T) {
	s, err := ParseElicitSchema([]byte(`{"type":"object","$schema":"x","properties":{
		"colour":{"type":"string","enum":["red","green"],"pattern":"^r","default":3},
		"n":{"type":"integer","minimum":1.5,"maximum":10,"default":2},
		"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":""}]}},
		"ok":{"type":"boolean","default":"yes"}},
		"required":["colour","nope","colour"]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(s)
	want := `{"type":"object","properties":{"colour":{"type":"string","pattern":"^r","enum":["red","green"]},"n":{"type":"integer","default":2,"maximum":10},` +
		`"ok":{"type":"boolean"},"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"a"}]}}},"required":["colour"]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{
		`{"type":"array"}`, `{"properties":{}}`, `{"properties":{"a":{"type":"object"}}}`,
		`{"properties":{"a":{"type":"array","items":{}}}}`, `[]`,
		`{"properties":{"a":{"type":"string","enum":[` + strings.Repeat(`"x",`, maxElicitOptions) + `"y"]}}}`,
	} {
		if _, err := ParseElicitSchema([]byte(bad)); err == nil {
			t.Errorf("%.80s: accepted", bad)
		}
	}
	if _, err := ParseElicitSchema([]byte(`{"properties":{"a":{"type":"string","description":"` + strings.Repeat("d", MaxMCPElicitSchemaBytes) + `"}}}`)); err == nil {
		t.Error("a schema over the size bound was accepted")
	}
}

// FuzzParseElicitSchema: whatever an MCP server sends, a schema that is
// accepted is bounded and the frame carrying it is schema-valid.
func FuzzParseElicitSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","enum":["x","y"]}},"required":["a"]}`,
		`{"properties":{"b":{"type":"boolean","default":true},"n":{"type":"number","minimum":-1e308}}}`,
		`{"properties":{"m":{"type":"array","items":{"type":"string","enum":["p","q"]},"default":["p"]}}}`,
		`{"properties":{"t":{"type":"string","oneOf":[{"const":"\u0000\u001b[2J","title":"\u00ff"}],"format":"email"}}}`,
		"{\"properties\":{\"\xff\":{\"type\":\"string\",\"title\":\"\x1b]0;x\x07\"}}}",
		`{"properties":{"i":{"type":"integer","minimum":1e300,"default":1.5}}}`,
		`{"properties":{"c":{"type":"string","pattern":"^[A-Z]{3}-[0-9]+$"}}}`,
		`{"properties":{"c":{"type":"string","pattern":"^(?=.*\\d)\\1\u0000(a{1000}){1000}"}}}`,
		`{"properties":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 201),
	} {
		f.Add([]byte(s))
	}
	vs := validators(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseElicitSchema(raw)
		if err != nil {
			return
		}
		if len(s.Properties) == 0 || len(s.Properties) > MaxMCPElicitFields {
			t.Fatalf("%d properties", len(s.Properties))
		}
		for name, p := range s.Properties {
			if len(name) > maxElicitNameBytes || len(p.Title) > maxElicitText || len(p.Description) > maxElicitText ||
				len(p.Enum) > maxElicitOptions || len(p.OneOf) > maxElicitOptions {
				t.Fatalf("property %q not bounded", name)
			}
		}
		req := &acp.CreateElicitationRequest{Mode: acp.ElicitForm, SessionID: "s", Message: "m", RequestedSchema: s}
		for _, v := range vs {
			if err := v.ValidateAgentFrame(askFrame(t, req), nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// AskUserQuestion's shape (Claude Code's): one question is read as ours,
// several are refused so the model asks them one at a time.
func TestAskUserQuestionShape(t *testing.T) {
	one := `{"questions":[{"question":"Which?","header":"h","multiSelect":false,"options":[{"label":"A","description":"a"},{"label":"B"}]}]}`
	act, err := askUser{}.Prepare(&Env{SessionID: "s"}, json.RawMessage(one))
	if err != nil || act.Title != "Question: Which?" {
		t.Fatalf("one question: %v %+v", err, act)
	}
	var a askArgs
	if err := json.Unmarshal([]byte(one), &a); err != nil || a.fromQuestions() != nil {
		t.Fatal(err)
	}
	if a.Question != "Which?" || strings.Join(a.Choices, ",") != "A,B" {
		t.Errorf("read as %q %q, want the question and the options' labels", a.Question, a.Choices)
	}
	two := `{"questions":[{"question":"A?"},{"question":"B?"}]}`
	if _, err := (askUser{}).Prepare(&Env{SessionID: "s"}, json.RawMessage(two)); err == nil || !strings.Contains(err.Error(), "one question per call") {
		t.Errorf("two questions: %v", err)
	}
}
