package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// AskUserTool is the tool the model asks the user a question with.
const AskUserTool = "ask_user"

// Bounds of a question: the model writes it and the user reads it, in a
// form, a permission dialog or a terminal.
const (
	MaxQuestionBytes = 2000
	MaxChoices       = 12
	MaxChoiceBytes   = 200
	// MaxAnswerBytes bounds what of an answer reaches the model.
	MaxAnswerBytes = 8 << 10
	// DefaultQuestionTimeout bounds how long a question stays open: then it
	// is withdrawn ($/cancel_request) and the model told.
	DefaultQuestionTimeout = 30 * time.Minute
)

// The form fields of an ask_user question.
const (
	answerField = "answer"
	otherField  = "other"
)

type askUser struct{}

func (askUser) Definition() provider.Tool {
	return provider.Tool{
		Name:        AskUserTool,
		Description: "Ask the user a question you cannot go on without, and wait for the answer.",
		Parameters: object(props{
			"question": str("The question"),
			"choices":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "A few possible answers"},
		}, "question"),
	}
}

type askArgs struct {
	Question string   `json:"question"`
	Choices  []string `json:"choices"`
	// Questions is Claude Code's AskUserQuestion shape, which models
	// trained on it send (repair maps the tool's name here): a list of
	// questions, each with options that have a label.
	Questions []struct {
		Question string `json:"question"`
		Options  []struct {
			Label string `json:"label"`
		} `json:"options"`
	} `json:"questions"`
}

// fromQuestions reads AskUserQuestion's shape as ours: its one question
// and its options' labels. Several questions are refused, so that the
// model asks them one at a time.
func (a *askArgs) fromQuestions() error {
	if a.Question != "" || len(a.Questions) == 0 {
		return nil
	}
	if len(a.Questions) > 1 {
		return fmt.Errorf("%d questions in one call: ask one question per call (question, choices)", len(a.Questions))
	}
	a.Question = a.Questions[0].Question
	for _, o := range a.Questions[0].Options {
		a.Choices = append(a.Choices, o.Label)
	}
	return nil
}

func (askUser) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a askArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if err := a.fromQuestions(); err != nil {
		return nil, err
	}
	q, err := newQuestion(a)
	if err != nil {
		return nil, err
	}
	callID := env.CallID
	return &Action{
		Title: "Question: " + cutRunes(oneLine(a.Question), 80), Kind: acp.ToolKindOther, Access: AccessNone,
		Run: func(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
			return q.result(a, Ask(ctx, env, callID, q))
		},
	}, nil
}

// newQuestion checks the model's question and makes it a form.
func newQuestion(a askArgs) (*Question, error) {
	a.Question = strings.TrimSpace(a.Question)
	switch {
	case a.Question == "":
		return nil, errors.New("question is empty")
	case len(a.Question) > MaxQuestionBytes:
		return nil, fmt.Errorf("question is %d bytes; keep it under %d", len(a.Question), MaxQuestionBytes)
	case len(a.Choices) > MaxChoices:
		return nil, fmt.Errorf("%d choices; give at most %d", len(a.Choices), MaxChoices)
	}
	q := &Question{Message: a.Question, Field: answerField,
		Schema: &acp.ElicitationSchema{Type: "object", Properties: map[string]acp.ElicitationProperty{}}}
	seen := map[string]bool{}
	var options []acp.EnumOption
	for i, c := range a.Choices {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			return nil, fmt.Errorf("choices[%d] is empty", i)
		case len(c) > MaxChoiceBytes:
			return nil, fmt.Errorf("choices[%d] is %d bytes; keep each under %d", i, len(c), MaxChoiceBytes)
		case seen[c]:
			return nil, fmt.Errorf("choices[%d] %q is given twice", i, c)
		}
		seen[c] = true
		options = append(options, acp.EnumOption{Const: c, Title: c})
		q.Choices = append(q.Choices, Choice{Title: c, Value: mustJSON(c)})
	}
	if len(options) == 0 {
		q.Schema.Properties[answerField] = acp.ElicitationProperty{Type: "string", Title: "Answer"}
		q.Schema.Required = []string{answerField}
		return q, nil
	}
	// Choices, and a box for an answer in the user's own words (as
	// claude-agent-acp renders AskUserQuestion); neither is required.
	q.Schema.Properties[answerField] = acp.ElicitationProperty{Type: "string", Title: "Answer", OneOf: options}
	q.Schema.Properties[otherField] = acp.ElicitationProperty{Type: "string", Title: "Other",
		Description: "Or answer in your own words (optional)."}
	return q, nil
}

// result tells the model and the user how the question was answered.
func (q *Question) result(a askArgs, ans Answer) Result {
	shown := func(s string) []acp.ToolCallContent {
		return []acp.ToolCallContent{acp.ToolText(q.Message + "\n\n" + s)}
	}
	switch {
	case ans.Cancelled:
		return Failure("cancelled: the user cancelled the turn while the question was open")
	case ans.Err != nil:
		return Failure("the question could not be asked: %v", ans.Err)
	case ans.Action == "":
		// Nobody could be asked now: the question becomes the turn's answer.
		return Result{
			Output:  "The question was shown to the user as your reply and the turn ended; the user's next message answers it.",
			Content: shown("(asked in the reply)"),
			EndTurn: textQuestion(a.Question, q.Choices),
		}
	case ans.Action == acp.ElicitDecline:
		return Result{Output: "The user declined to answer. Go on without it if you can (say what you assumed), or stop.",
			Content: shown("Declined.")}
	case ans.Action != acp.ElicitAccept:
		return Result{Output: "The user dismissed the question without answering. Do not ask it again in this turn.",
			Content: shown("Dismissed.")}
	}
	answer := stringValue(ans.Content[answerField])
	if other := strings.TrimSpace(stringValue(ans.Content[otherField])); other != "" {
		if answer != "" {
			answer += " (" + other + ")"
		} else {
			answer = other
		}
	}
	if strings.TrimSpace(answer) == "" {
		return Result{Output: "The user answered with nothing. Go on without it if you can (say what you assumed), or stop.",
			Content: shown("No answer.")}
	}
	answer = cutAnswer(answer)
	return Result{Output: "The user answered: " + answer, Content: shown("Answer: " + answer)}
}

// textQuestion is the question written as a reply: the choices numbered.
func textQuestion(question string, choices []Choice) string {
	var b strings.Builder
	b.WriteString(question)
	for i, c := range choices {
		fmt.Fprintf(&b, "\n%d. %s", i+1, c.Title)
	}
	return b.String()
}

// Question is what Ask shows: a message and a form. When the form is one
// choice (Field with Choices), a client without forms is asked with a
// permission request, one option per choice.
type Question struct {
	Message string
	Schema  *acp.ElicitationSchema
	Field   string
	Choices []Choice
}

// Choice is one option of a single-choice form: its label and the JSON
// value answering Field.
type Choice struct {
	Title string
	Value json.RawMessage
}

// Answer is what Ask got. Action "" means nobody could be asked: the
// client has no forms and the question is not a single choice.
type Answer struct {
	Action    string // accept, decline, cancel, or ""
	Content   map[string]json.RawMessage
	Cancelled bool  // the turn ended while the question was open
	Err       error // the client failed, or the question timed out
}

// Ask asks the user q in session env.SessionID, tied to tool call callID:
// with elicitation/create where the client advertised forms, else with a
// permission request when q is a single choice. The turn's ctx ends it
// (the client is told with $/cancel_request); it is bounded by
// env.QuestionTimeout.
func Ask(ctx context.Context, env *Env, callID string, q *Question) Answer {
	limit := env.QuestionTimeout
	if limit <= 0 {
		limit = DefaultQuestionTimeout
	}
	qctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ans := ask(qctx, env, callID, q)
	switch {
	case ctx.Err() != nil:
		return Answer{Cancelled: true}
	case qctx.Err() != nil:
		return Answer{Err: fmt.Errorf("the user did not answer within %s; the question was withdrawn", limit)}
	}
	return ans
}

func ask(ctx context.Context, env *Env, callID string, q *Question) Answer {
	if env.Elicit != nil {
		res, err := env.Elicit(ctx, &acp.CreateElicitationRequest{Mode: acp.ElicitForm, SessionID: env.SessionID,
			ToolCallID: callID, Message: q.Message, RequestedSchema: q.Schema})
		if err != nil {
			return failed(err)
		}
		return Answer{Action: res.Action, Content: res.Content}
	}
	if len(q.Choices) == 0 || q.Field == "" || env.Client == nil {
		return Answer{}
	}
	// One option per choice, all allow_once (the schema's kinds are about
	// permission; a choice is a go-ahead), and one to decline.
	const decline = "decline"
	opts := make([]acp.PermissionOption, 0, len(q.Choices)+1)
	for i, c := range q.Choices {
		opts = append(opts, acp.PermissionOption{OptionID: "choice_" + strconv.Itoa(i+1), Name: c.Title, Kind: acp.PermissionAllowOnce})
	}
	opts = append(opts, acp.PermissionOption{OptionID: decline, Name: "Don't answer", Kind: acp.PermissionRejectOnce})
	res, err := env.Client.RequestPermission(ctx, &acp.RequestPermissionRequest{
		SessionID: env.SessionID,
		ToolCall: acp.ToolCallUpdate{ToolCallID: callID, Title: cutRunes(oneLine(q.Message), 200), Kind: acp.ToolKindOther,
			Status: acp.ToolStatusPending, Content: []acp.ToolCallContent{acp.ToolText(q.Message)}},
		Options: opts,
	})
	if err != nil {
		return failed(err)
	}
	if res.Outcome.Outcome != "selected" {
		return Answer{Action: acp.ElicitCancel}
	}
	if res.Outcome.OptionID == decline {
		return Answer{Action: acp.ElicitDecline}
	}
	n, err := strconv.Atoi(strings.TrimPrefix(res.Outcome.OptionID, "choice_"))
	if err != nil || n < 1 || n > len(q.Choices) || !strings.HasPrefix(res.Outcome.OptionID, "choice_") {
		return Answer{Err: fmt.Errorf("the client chose option %q, which was not offered", res.Outcome.OptionID)}
	}
	return Answer{Action: acp.ElicitAccept, Content: map[string]json.RawMessage{q.Field: q.Choices[n-1].Value}}
}

// failed is the answer to a client call that failed: cancelled when the
// client went away (acp.ErrClientGone wraps context.Canceled).
func failed(err error) Answer {
	if errors.Is(err, context.Canceled) {
		return Answer{Cancelled: true}
	}
	return Answer{Err: err}
}

// stringValue is a form value as text: a string as is, anything else (a
// number, a boolean, a list) as its JSON.
func stringValue(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, ", ")
	}
	return string(raw)
}

// cutAnswer bounds what of an answer the model reads.
func cutAnswer(s string) string {
	if len(s) <= MaxAnswerBytes {
		return s
	}
	cut := MaxAnswerBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" [... %d more bytes of the answer not shown]", len(s)-cut)
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cutRunes cuts s to at most n runes, marking the cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("tool: encode %v: %v", v, err))
	}
	return b
}
