package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
)

// Rule is a request rule of a real provider. The server checks every chat
// request against its rules before it takes a reply; a broken rule is
// answered with the provider's own status and error body, byte for byte,
// and takes no reply from the queue.
type Rule interface {
	check(req *ruleRequest) *Rejection
}

// Rejection is a provider's answer to a request that broke one of its rules.
type Rejection struct {
	Status int
	Body   string // the exact response body (JSON)
}

func (r *Rejection) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	_, _ = w.Write([]byte(r.Body))
}

// ruleRequest is a chat request as the rules read it: top-level keys and
// messages with their keys kept, because most rules are about a field being
// there at all.
type ruleRequest struct {
	Auth     string // the Authorization header
	Model    string
	Keys     map[string]json.RawMessage
	Messages []map[string]json.RawMessage
}

func (r *ruleRequest) str(m map[string]json.RawMessage, key string) string {
	var s string
	_ = json.Unmarshal(m[key], &s)
	return s
}

// toolCallIDs lists the ids of an assistant message's tool calls.
func (r *ruleRequest) toolCallIDs(m map[string]json.RawMessage) []string {
	var calls []struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(m["tool_calls"], &calls)
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	return ids
}

// ruleFunc adapts a function to Rule.
type ruleFunc func(*ruleRequest) *Rejection

func (f ruleFunc) check(r *ruleRequest) *Rejection { return f(r) }

// forModel applies a rule only to requests for one model.
type forModel struct {
	model string
	rule  Rule
}

func (f forModel) check(r *ruleRequest) *Rejection {
	if r.Model != f.model {
		return nil
	}
	return f.rule.check(r)
}

// ruleMakers builds each named rule from its arguments.
var ruleMakers = map[string]func(args []string) (Rule, error){
	"deepseek-v4-thinking":         noArgs(deepseekV4Thinking),
	"deepseek-reasoning-field":     noArgs(deepseekReasoningField),
	"deepseek-r1-reasoning-input":  noArgs(deepseekR1ReasoningInput),
	"mistral-tool-call-ids":        noArgs(mistralToolCallIDs),
	"openai-max-completion-tokens": noArgs(openAIMaxCompletionTokens),
	"unknown-parameter":            unknownParameter,
	"unique-tool-call-ids":         noArgs(uniqueToolCallIDs),
	"openrouter-key":               openRouterKey,
	"gemini-thought-signature":     noArgs(geminiThoughtSignature),
	"openai-unverified-org":        noArgs(openAIUnverifiedOrg),
	"strict-alternation":           noArgs(strictAlternation),
}

// StrictAlternation is the strict-alternation rule, for tests that turn it
// on for every scenario.
var StrictAlternation Rule = ruleFunc(strictAlternation)

// RuleNames lists the rules ParseRules knows.
func RuleNames() []string {
	names := make([]string, 0, len(ruleMakers))
	for n := range ruleMakers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseRules reads rules, one a line: a rule name, its arguments, and
// optionally model=NAME to apply it only to requests for that model.
// Blank lines and lines starting with # are skipped.
func ParseRules(text []byte) ([]Rule, error) {
	var out []Rule
	sc := bufio.NewScanner(bytes.NewReader(text))
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		model := ""
		var args []string
		for _, f := range fields[1:] {
			if m, ok := strings.CutPrefix(f, "model="); ok {
				model = m
				continue
			}
			args = append(args, f)
		}
		mk, ok := ruleMakers[fields[0]]
		if !ok {
			return nil, fmt.Errorf("fakemodel: rules line %d: unknown rule %q (known: %s)", line, fields[0], strings.Join(RuleNames(), ", "))
		}
		r, err := mk(args)
		if err != nil {
			return nil, fmt.Errorf("fakemodel: rules line %d: %s: %w", line, fields[0], err)
		}
		if model != "" {
			r = forModel{model: model, rule: r}
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

func noArgs(f func(*ruleRequest) *Rejection) func([]string) (Rule, error) {
	return func(args []string) (Rule, error) {
		if len(args) > 0 {
			return nil, fmt.Errorf("takes no arguments, got %q", args)
		}
		return ruleFunc(f), nil
	}
}

// openAIError is OpenAI's error body, as DeepSeek and others copy it.
func openAIError(message, typ string, param, code any) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": param, "code": code,
	}})
	return string(b)
}

// deepseekV4Thinking: DeepSeek V4 in thinking mode wants the
// reasoning_content of every assistant message with tool calls passed back.
// The body is the one users report (langchain-ai/langchain#37713,
// endolith/open-interpreter#215; https://api-docs.deepseek.com/guides/thinking_mode#tool-calls).
func deepseekV4Thinking(r *ruleRequest) *Rejection {
	for _, m := range r.Messages {
		if r.str(m, "role") != "assistant" || len(r.toolCallIDs(m)) == 0 {
			continue
		}
		if _, ok := m["reasoning_content"]; !ok {
			return &Rejection{Status: 400, Body: openAIError(
				"The `reasoning_content` in the thinking mode must be passed back to the API.",
				"invalid_request_error", nil, "invalid_request_error")}
		}
	}
	return nil
}

// deepseekReasoningField: deepseek-reasoner (V3.2 thinking mode) wants the
// reasoning_content field on every assistant message once tools are in
// play, an empty one included (continuedev/continue#11285 and its fix #11290,
// hotovo/aider-desk#529 for the body).
func deepseekReasoningField(r *ruleRequest) *Rejection {
	tools := false
	for _, m := range r.Messages {
		tools = tools || len(r.toolCallIDs(m)) > 0
	}
	if !tools {
		return nil
	}
	for i, m := range r.Messages {
		if r.str(m, "role") != "assistant" {
			continue
		}
		if _, ok := m["reasoning_content"]; !ok {
			return &Rejection{Status: 400, Body: openAIError(
				fmt.Sprintf("Missing `reasoning_content` field in the assistant message at message index %d. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls", i),
				"invalid_request_error", nil, "invalid_request_error")}
		}
	}
	return nil
}

// deepseekR1ReasoningInput: the first deepseek-reasoner (R1, 2025) refused
// reasoning_content in its input (Euyug/Mirai-Gpt-Plugin#4 quotes the
// message; https://api-docs.deepseek.com/guides/reasoning_model).
func deepseekR1ReasoningInput(r *ruleRequest) *Rejection {
	for _, m := range r.Messages {
		if _, ok := m["reasoning_content"]; ok {
			return &Rejection{Status: 400, Body: openAIError(
				"The reasoning_content is an intermediate result for display purposes only and will not be included in the context for inference. Please remove the reasoning_content from your message to reduce network traffic.",
				"invalid_request_error", nil, "invalid_request_error")}
		}
	}
	return nil
}

var mistralID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// mistralToolCallIDs: Mistral's API (and mistral_common behind vLLM and
// others) accepts only tool-call ids of exactly 9 characters [a-zA-Z0-9],
// in assistant tool calls and in tool results alike. Body as reported in
// mistralai/mistral-vibe#1075 and editor-code-assistant/eca#233.
func mistralToolCallIDs(r *ruleRequest) *Rejection {
	for _, m := range r.Messages {
		ids := r.toolCallIDs(m)
		if id := r.str(m, "tool_call_id"); r.str(m, "role") == "tool" {
			ids = append(ids, id)
		}
		for _, id := range ids {
			if !mistralID.MatchString(id) {
				b, _ := json.Marshal(map[string]any{
					"object":  "error",
					"message": "Tool call id was " + id + " but must be a-z, A-Z, 0-9, with a length of 9.",
					"type":    "invalid_function_call", "param": nil, "code": "3280",
				})
				return &Rejection{Status: 400, Body: string(b)}
			}
		}
	}
	return nil
}

// uniqueToolCallIDs: an assistant message whose tool calls share an id is
// refused ("Duplicate value for 'tool_call_id'", HKUDS/nanobot#3943, against
// Zhipu and DeepSeek, whose streams give parallel calls the same id).
func uniqueToolCallIDs(r *ruleRequest) *Rejection {
	for i, m := range r.Messages {
		seen := map[string]bool{}
		for _, id := range r.toolCallIDs(m) {
			if seen[id] {
				return &Rejection{Status: 400, Body: openAIError(
					fmt.Sprintf("Duplicate value for 'tool_call_id' of %s in message[%d]", id, i),
					"invalid_request_error", nil, "invalid_request_error")}
			}
			seen[id] = true
		}
	}
	return nil
}

// openAIMaxCompletionTokens: OpenAI's reasoning models (o-series, gpt-5)
// refuse max_tokens (griptape-ai/ComfyUI-Griptape#312 and
// ITSpecialist111/ai_automation_suggester#38 quote the body).
func openAIMaxCompletionTokens(r *ruleRequest) *Rejection {
	if _, ok := r.Keys["max_tokens"]; !ok {
		return nil
	}
	return &Rejection{Status: 400, Body: openAIError(
		"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
		"invalid_request_error", "max_tokens", "unsupported_parameter")}
}

// unknownParameter NAME: a server that refuses a request parameter it does
// not know, as OpenAI-shaped gateways answer for stream_options
// (QuantumNous/new-api#418 quotes the body).
func unknownParameter(args []string) (Rule, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("wants one parameter name, got %q", args)
	}
	name := args[0]
	return ruleFunc(func(r *ruleRequest) *Rejection {
		if _, ok := r.Keys[name]; !ok {
			return nil
		}
		return &Rejection{Status: 400, Body: openAIError(
			"Unknown parameter: '"+name+"'.", "invalid_request_error", name, "unknown_parameter")}
	}), nil
}

// UseSSE fills the RawSSE of every reply that names an SSE body from
// bodies (a corpus fixture's -- sse NAME -- sections). A name with no body
// is an error.
func UseSSE(replies []Reply, bodies map[string][]byte) error {
	for i := range replies {
		name := replies[i].SSE
		if name == "" {
			continue
		}
		body, ok := bodies[name]
		if !ok {
			return fmt.Errorf("fakemodel: reply %d names sse %q, which is not defined", i+1, name)
		}
		if replies[i].RawSSE != "" {
			return fmt.Errorf("fakemodel: reply %d has both sse and raw_sse", i+1)
		}
		replies[i].RawSSE = string(body)
	}
	return nil
}

// openRouterKey: OpenRouter answers a request without its API key (or with
// another endpoint's) with 401 and this body (musistudio/claude-code-router#227
// quotes it; openrouter.ai/docs/api-reference/authentication).
func openRouterKey(args []string) (Rule, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("takes the key, got %q", args)
	}
	want := "Bearer " + args[0]
	return ruleFunc(func(r *ruleRequest) *Rejection {
		if r.Auth != want {
			return &Rejection{Status: 401, Body: `{"error":{"message":"No auth credentials found","code":401}}`}
		}
		return nil
	}), nil
}

// geminiThoughtSignature: Gemini 3 (OpenAI-compatible endpoint) wants the
// thought signature of each step's first function call back, as
// extra_content.google.thought_signature, for the calls of the current
// turn (after the last user message; earlier turns are not checked)
// (ai.google.dev/gemini-api/docs/thought-signatures). The body, a list as
// Gemini's OpenAI endpoint sends its errors, is the one quoted on
// discuss.ai.google.dev ("OpenAI API compatibility broken due to
// thought_signature on gemini-3-pro-preview").
func geminiThoughtSignature(r *ruleRequest) *Rejection {
	last := -1
	for i, m := range r.Messages {
		if r.str(m, "role") == "user" {
			last = i
		}
	}
	position := 0 // the content block, as Gemini counts them: system messages are not contents
	for i, m := range r.Messages {
		if r.str(m, "role") != "system" {
			position++
		}
		if i <= last || r.str(m, "role") != "assistant" {
			continue
		}
		var calls []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
			ExtraContent struct {
				Google struct {
					ThoughtSignature string `json:"thought_signature"`
				} `json:"google"`
			} `json:"extra_content"`
		}
		_ = json.Unmarshal(m["tool_calls"], &calls)
		if len(calls) == 0 || calls[0].ExtraContent.Google.ThoughtSignature != "" {
			continue
		}
		b, _ := json.Marshal([]any{map[string]any{"error": map[string]any{
			"code": 400,
			"message": fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
				calls[0].Function.Name, position),
			"status": "INVALID_ARGUMENT",
		}}})
		return &Rejection{Status: 400, Body: string(b)}
	}
	return nil
}

// openAIUnverifiedOrg: OpenAI refuses reasoning summaries (Responses API,
// reasoning.summary) to an organization it has not verified; the body is
// the one quoted in continuedev/continue#9854 and
// OpenHands/software-agent-sdk#987.
func openAIUnverifiedOrg(r *ruleRequest) *Rejection {
	var reasoning struct {
		Summary string `json:"summary"`
	}
	if json.Unmarshal(r.Keys["reasoning"], &reasoning) != nil || reasoning.Summary == "" {
		return nil
	}
	return &Rejection{Status: 400, Body: openAIError(
		"Your organization must be verified to generate reasoning summaries. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization. If you just verified, it can take up to 15 minutes for access to propagate.",
		"invalid_request_error", "reasoning.summary", "unsupported_value")}
}

// strictAlternation: llama.cpp's server renders the chat with the model's
// Jinja template, and the strict ones (Mistral, Gemma, Devstral) raise an
// exception unless, after the optional system messages, the conversation
// starts with a user message and user and assistant alternate (tool results
// between an assistant's calls and the next assistant are allowed). The
// server answers 500 with the exception's text; the body is the one quoted
// in janhq/jan#6254, without the template trace that follows the message
// (sipeed/picoclaw#207 and SWE-agent/mini-swe-agent#759 show Devstral's
// wording of the same rule).
func strictAlternation(r *ruleRequest) *Rejection {
	prev := ""
	for _, m := range r.Messages {
		role := r.str(m, "role")
		switch {
		case role == "system":
			continue
		case role == "tool" && (prev == "assistant" || prev == "tool"):
		case (role == "user" && prev != "user") || (role == "assistant" && prev != "assistant" && prev != ""):
		default:
			b, _ := json.Marshal(map[string]any{"error": map[string]any{
				"code":    500,
				"message": "Conversation roles must alternate user/assistant/user/assistant/...",
				"type":    "server_error",
			}})
			return &Rejection{Status: 500, Body: string(b)}
		}
		prev = role
	}
	return nil
}
