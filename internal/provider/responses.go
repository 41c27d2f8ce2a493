package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// ReasoningItem is a reasoning item of OpenAI's Responses API: the
// model's (encrypted) reasoning that must go back with the function calls
// it led to, within one turn, or the next request is refused.
type ReasoningItem struct {
	ID               string
	EncryptedContent string
	Summary          []string
}

// ResponsesClient streams from OpenAI's Responses API (POST {base}/responses)
// with openai-go's responses package: output text streams as text,
// reasoning summaries as reasoning, function calls as tool calls; the
// reasoning items of a reply come back in Result.ReasoningItems so that the
// caller can send them with the reply's function calls (Message.ReasoningItems).
// Nothing is stored at OpenAI (store: false): every request carries the
// whole context, rebuilt from crow-acp's store like a chat-completions one.
type ResponsesClient struct {
	c   *OpenAIClient // options, idle and overall timeouts, error classification, redaction
	svc responses.ResponseService

	mu sync.Mutex
	// noSummary: models whose reasoning summaries this endpoint refused
	// (an unverified OpenAI organization), remembered like the refused
	// parameters of chat completions.
	noSummary map[string]bool
}

var _ Client = (*ResponsesClient)(nil)

// NewResponses returns a Responses API client for cfg (the same settings
// as NewOpenAI; the environment is never read).
func NewResponses(cfg OpenAIConfig) *ResponsesClient {
	c := NewOpenAI(cfg)
	return &ResponsesClient{c: c, svc: responses.NewResponseService(c.opts...)}
}

// Stream implements Client.
//
// The request goes through the layer chat completions use: tool-call ids
// are written per model (bodyShape.toolCallID), and a parameter the
// endpoint refuses with 400 is dropped, remembered for the model, and the
// request sent once more. The only such parameter here is
// reasoning.summary, which OpenAI refuses for organizations that are not
// verified: "Your organization must be verified to generate reasoning
// summaries..." (param "reasoning.summary", code "unsupported_value";
// continuedev/continue#9854, OpenHands/software-agent-sdk#987). Without
// it the model still reasons; only the summaries (the thoughts) are gone.
func (r *ResponsesClient) Stream(ctx context.Context, req Request, onEvent func(Event) error) (*Result, error) {
	if onEvent == nil {
		onEvent = func(Event) error { return nil }
	}
	shape := shapeFor(req)
	r.mu.Lock()
	shape.noReasoningSummary = r.noSummary[req.Model]
	r.mu.Unlock()
	for {
		res, err := r.stream(ctx, req, shape, onEvent)
		if !r.learn(req, &shape, err) {
			return res, err
		}
	}
}

// learn reads a 400 that refused the reasoning summary, remembers it for
// the model and reports whether to try again without it (once).
func (r *ResponsesClient) learn(req Request, s *bodyShape, err error) bool {
	var api *APIError
	if s.noReasoningSummary || !reasoningModel(req.Model) || !errors.As(err, &api) || api.StatusCode != http.StatusBadRequest {
		return false
	}
	msg := strings.ToLower(api.Message)
	if !strings.Contains(msg, "reasoning.summary") && !strings.Contains(msg, "reasoning summar") {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.noSummary == nil {
		r.noSummary = make(map[string]bool)
	}
	r.noSummary[req.Model] = true
	s.noReasoningSummary = true
	return true
}

// stream makes one request with the body written in shape.
func (r *ResponsesClient) stream(ctx context.Context, req Request, shape bodyShape, onEvent func(Event) error) (*Result, error) {
	var acc responsesAccumulator
	if err := ctx.Err(); err != nil {
		return acc.result(), fmt.Errorf("streaming: %w", err)
	}
	c := r.c
	sctx, w, done := c.watchRequest(ctx)
	defer done()
	stream := r.svc.NewStreaming(sctx, responsesParams(req, shape),
		option.WithMiddleware(w.middleware(c.redactor)), option.WithMiddleware(boundEvents(c.limits.event)))
	var err error
	var out outputSize
	for stream.Next() {
		evs, evErr := acc.add(stream.Current())
		if evErr != nil {
			err = evErr
			break
		}
		for _, ev := range evs {
			out.add(ev)
			if oerr := onEvent(ev); oerr != nil {
				_ = stream.Close()
				return acc.result(), oerr
			}
		}
		// As in chat completions: checked after the event is shown.
		out.calls = len(acc.calls)
		if err = c.limits.check(out); err != nil {
			break
		}
		w.kick()
	}
	if err == nil {
		err = stream.Err()
	}
	var sse *ssestream.StreamError
	if errors.As(err, &sse) {
		err = errorEvent(sse.Event.Data, "", "")
	}
	_ = stream.Close()
	res := acc.result()
	var failed *responseFailed
	if errors.As(err, &failed) {
		if ov := ParseOverflow([]byte(failed.body)); ov != nil {
			return res, &overflowEventError{overflow: ov, message: c.redact(failed.message)}
		}
		return res, fmt.Errorf("streaming: %w: the endpoint reported: %s", ErrIncompleteStream, c.redact(failed.message))
	}
	if err := c.streamError(ctx, sctx, w, acc.events, err); err != nil {
		return res, err
	}
	if !acc.done {
		return res, fmt.Errorf("streaming: %w: the stream ended before response.completed after %d events", ErrIncompleteStream, acc.events)
	}
	return res, nil
}

// responseFailed is an error or response.failed event.
type responseFailed struct{ message, body string }

func (e *responseFailed) Error() string { return e.message }

// responsesParams builds the request: system messages become the
// instructions, the rest input items in order, an assistant's reasoning
// items right before its function calls, call ids as shape writes them.
func responsesParams(req Request, shape bodyShape) responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model: shared.ResponsesModel(req.Model),
		Store: param.NewOpt(false),
	}
	var instructions []string
	var items responses.ResponseInputParam
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			instructions = append(instructions, m.Content)
		case RoleUser:
			items = append(items, userItem(m))
		case RoleAssistant:
			for _, ri := range m.ReasoningItems {
				rp := responses.ResponseReasoningItemParam{ID: ri.ID, Summary: []responses.ResponseReasoningItemSummaryParam{}}
				for _, s := range ri.Summary {
					rp.Summary = append(rp.Summary, responses.ResponseReasoningItemSummaryParam{Text: s})
				}
				if ri.EncryptedContent != "" {
					rp.EncryptedContent = param.NewOpt(ri.EncryptedContent)
				}
				items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &rp})
			}
			if m.Content != "" {
				items = append(items, responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range m.ToolCalls {
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(argumentsForHistory(tc.Arguments), shape.toolCallID(tc.ID), tc.Name))
			}
		case RoleTool:
			out := responses.ResponseInputItemParamOfFunctionCallOutput(m.Content)
			out.OfFunctionCallOutput.CallID = param.NewOpt(shape.toolCallID(m.ToolCallID))
			items = append(items, out)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	if len(instructions) > 0 {
		p.Instructions = param.NewOpt(strings.Join(instructions, "\n\n"))
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, responses.ToolParamOfFunction(t.Name, t.Parameters, false))
		p.Tools[len(p.Tools)-1].OfFunction.Description = param.NewOpt(t.Description)
	}
	if req.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if reasoningModel(req.Model) {
		// Summaries stream as thoughts; the encrypted reasoning comes back
		// so it can be passed on within the turn (store is off).
		if !shape.noReasoningSummary {
			p.Reasoning = shared.ReasoningParam{Summary: shared.ReasoningSummaryAuto}
		}
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	return p
}

// userItem is a user message: plain text, or input_text and input_image
// parts (images as data URLs) when it carries parts.
func userItem(m Message) responses.ResponseInputItemUnionParam {
	if len(m.Parts) == 0 {
		return responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleUser)
	}
	var content responses.ResponseInputMessageContentListParam
	if m.Content != "" {
		content = append(content, responses.ResponseInputContentParamOfInputText(m.Content))
	}
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				content = append(content, responses.ResponseInputContentParamOfInputText(p.Text))
			}
		case "image":
			img := responses.ResponseInputContentParamOfInputImage(responses.ResponseInputImageDetailAuto)
			img.OfInputImage.ImageURL = param.NewOpt("data:" + p.MimeType + ";base64," + p.Data)
			content = append(content, img)
		}
	}
	return responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser)
}

// reasoningModel reports OpenAI's reasoning models, which accept the
// reasoning parameter (others refuse it).
func reasoningModel(name string) bool {
	name = strings.TrimPrefix(name, "openai/")
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "codex"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// responsesAccumulator turns Responses stream events into Events and the
// Result.
type responsesAccumulator struct {
	text, reasoning strings.Builder
	calls           []ToolCall
	args            []*strings.Builder // calls' arguments as streamed: appending copies nothing
	callAt          map[int64]int      // output_index -> calls index
	items           []ReasoningItem
	usage           *Usage
	finish          FinishReason
	done            bool
	events          int
}

func (a *responsesAccumulator) add(ev responses.ResponseStreamEventUnion) ([]Event, error) {
	a.events++
	switch ev.Type {
	case "response.output_text.delta":
		if ev.Delta == "" {
			return nil, nil
		}
		a.text.WriteString(ev.Delta)
		return []Event{{Kind: EventText, Text: ev.Delta}}, nil
	case "response.reasoning_summary_text.delta":
		if ev.Delta == "" {
			return nil, nil
		}
		a.reasoning.WriteString(ev.Delta)
		return []Event{{Kind: EventReasoning, Text: ev.Delta}}, nil
	case "response.reasoning_summary_part.added":
		if a.reasoning.Len() > 0 {
			a.reasoning.WriteString("\n\n")
			return []Event{{Kind: EventReasoning, Text: "\n\n"}}, nil
		}
	case "response.output_item.added":
		if ev.Item.Type == "function_call" {
			fc := ev.Item.AsFunctionCall()
			if a.callAt == nil {
				a.callAt = make(map[int64]int)
			}
			a.callAt[ev.OutputIndex] = len(a.calls)
			a.calls = append(a.calls, ToolCall{ID: fc.CallID, Name: fc.Name})
			a.args = append(a.args, &strings.Builder{})
			return []Event{{Kind: EventToolCallDelta, ToolIndex: len(a.calls) - 1, ToolCall: a.calls[len(a.calls)-1]}}, nil
		}
	case "response.function_call_arguments.delta":
		if i, ok := a.callAt[ev.OutputIndex]; ok {
			a.args[i].WriteString(ev.Delta)
			a.calls[i].Arguments = a.args[i].String()
			return []Event{{Kind: EventToolCallDelta, ToolIndex: i, ToolCall: a.calls[i]}}, nil
		}
	case "response.output_item.done":
		switch ev.Item.Type {
		case "function_call":
			fc := ev.Item.AsFunctionCall()
			if i, ok := a.callAt[ev.OutputIndex]; ok {
				a.calls[i].Arguments = fc.Arguments // the whole arguments, authoritative
			}
		case "reasoning":
			ri := ev.Item.AsReasoning()
			item := ReasoningItem{ID: ri.ID, EncryptedContent: ri.EncryptedContent}
			for _, s := range ri.Summary {
				item.Summary = append(item.Summary, s.Text)
			}
			a.items = append(a.items, item)
		}
	case "response.completed", "response.incomplete":
		u := ev.Response.Usage
		usage := usageOf(ChunkUsage{PromptTokens: tokenCount(u.InputTokens), CompletionTokens: tokenCount(u.OutputTokens),
			TotalTokens: tokenCount(u.TotalTokens), CachedTokens: tokenCount(u.InputTokensDetails.CachedTokens),
			ReasoningTokens: tokenCount(u.OutputTokensDetails.ReasoningTokens)})
		a.usage = &usage
		a.done = true
		switch ev.Response.IncompleteDetails.Reason {
		case "max_output_tokens":
			a.finish = FinishLength
		case "content_filter":
			a.finish = FinishContentFilter
		}
		return []Event{{Kind: EventUsage, Usage: *a.usage}}, nil
	case "response.failed":
		e := ev.Response.Error
		return nil, &responseFailed{message: e.Message, body: fmt.Sprintf(`{"error":{"message":%q,"code":%q}}`, e.Message, string(e.Code))}
	case "error":
		return nil, errorEvent([]byte(ev.RawJSON()), ev.Message, ev.Code)
	}
	return nil, nil
}

// errorEvent reads an "error" event. OpenAI sends its code and message in
// a nested error object: {"type":"error","sequence_number":2,"error":
// {"type":"invalid_request_error","code":"context_length_exceeded",
// "message":"Your input exceeds the context window of this model. Please
// adjust your input and try again.","param":"input"}} (anomalyco/opencode#6071,
// dyad-sh/dyad#1672), which openai-go's stream turns into an
// ssestream.StreamError; openai-go's ResponseErrorEvent (OpenAI's OpenAPI
// spec) declares them at the top of the event. Both are read, so an
// overflow is recognised either way.
func errorEvent(raw []byte, message, code string) *responseFailed {
	if gjson.GetBytes(raw, "error").IsObject() {
		msg := decodeErrorFields(raw).message
		if msg == "" {
			msg = string(raw)
		}
		return &responseFailed{message: msg, body: string(raw)}
	}
	return &responseFailed{message: message, body: fmt.Sprintf(`{"error":{"message":%q,"code":%q}}`, message, code)}
}

func (a *responsesAccumulator) result() *Result {
	r := &Result{Text: a.text.String(), Reasoning: a.reasoning.String(), Usage: a.usage, ReasoningItems: a.items}
	for _, c := range a.calls {
		args, errText := checkArguments(c.Arguments)
		c.Arguments, c.ArgumentsError = args, errText
		r.ToolCalls = append(r.ToolCalls, c)
	}
	switch {
	case !a.done:
	case a.finish != "":
		r.FinishReason = a.finish
	case len(r.ToolCalls) > 0:
		r.FinishReason = FinishToolCalls
	default:
		r.FinishReason = FinishStop
	}
	return r
}
