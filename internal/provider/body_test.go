package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// buildParams and buildMessage are how Stream built its request before
// requestBody: from openai-go's parameters, which the SDK marshalled. They
// are kept here as the reference the plain body must equal.
func buildParams(req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		Messages:      make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		if usesMaxCompletionTokens(req.Model) {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	for i, m := range req.Messages {
		msg, err := buildMessage(m, shapeFor(req))
		if err != nil {
			return params, fmt.Errorf("streaming: message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if t.Parameters != nil {
			fn.Parameters = shared.FunctionParameters(t.Parameters)
		} else {
			fn.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return params, nil
}

func buildMessage(m Message, shape bodyShape) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleSystem:
		return openai.SystemMessage(textWithParts(m)), nil
	case RoleUser:
		if len(m.Parts) == 0 {
			return openai.UserMessage(m.Content), nil
		}
		parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(m.Parts)+1)
		if m.Content != "" {
			parts = append(parts, openai.TextContentPart(m.Content))
		}
		for _, p := range m.Parts {
			switch p.Type {
			case "text":
				parts = append(parts, openai.TextContentPart(p.Text))
			case "image":
				if p.MimeType == "" || p.Data == "" {
					return openai.ChatCompletionMessageParamUnion{}, errors.New("image part without mime type or data")
				}
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
					URL: "data:" + p.MimeType + ";base64," + p.Data,
				}))
			default:
				return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unsupported content part type %q", p.Type)
			}
		}
		return openai.UserMessage(parts), nil
	case RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if text := textWithParts(m); text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(text)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: shape.toolCallID(tc.ID),
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: argumentsForHistory(tc.Arguments),
					},
				},
			})
		}
		if shape.reasoning == ReasoningRequire || shape.reasoning == ReasoningEcho && m.Reasoning != "" {
			a.SetExtraFields(map[string]any{"reasoning_content": m.Reasoning})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case RoleTool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool message without tool call id")
		}
		return openai.ToolMessage(textWithParts(m), shape.toolCallID(m.ToolCallID)), nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// captureTransport records request bodies and answers with a one-chunk
// stream, so that both bodies are taken as the SDK sends them.
type captureTransport struct{ bodies [][]byte }

func (c *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return nil, fmt.Errorf("content type %q", ct)
	}
	c.bodies = append(c.bodies, b)
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(strings.NewReader("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")),
		Request:    r,
	}, nil
}

// sdkBody is the body openai-go sent for req before requestBody: the
// parameters of buildParams, posted the way Stream posted them.
func sdkBody(t testing.TB, req Request) ([]byte, error) {
	params, err := buildParams(req)
	if err != nil {
		return nil, err
	}
	ct := &captureTransport{}
	api := openai.Client{Options: []option.RequestOption{
		option.WithBaseURL("http://model.invalid/v1"),
		option.WithHTTPClient(&http.Client{Transport: ct}),
		option.WithMaxRetries(0),
	}}
	var raw *http.Response
	if err := api.Post(context.Background(), "chat/completions", params, &raw, option.WithJSONSet("stream", true)); err != nil {
		t.Fatalf("openai-go post: %v", err)
	}
	raw.Body.Close()
	return ct.bodies[0], nil
}

// streamBody is the body Stream sends for req now.
func streamBody(t testing.TB, req Request) ([]byte, error) {
	ct := &captureTransport{}
	c := NewOpenAI(OpenAIConfig{BaseURL: "http://model.invalid/v1", HTTPClient: &http.Client{Transport: ct}})
	if _, err := c.Stream(context.Background(), req, nil); err != nil {
		if len(ct.bodies) == 0 {
			return nil, err
		}
		t.Fatalf("stream: %v", err)
	}
	return ct.bodies[0], nil
}

func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	if d.More() {
		t.Fatalf("trailing data after the body: %s", b)
	}
	return v
}

// firstDiff names where two decoded JSON values first differ.
func firstDiff(a, b any, path string) string {
	switch a := a.(type) {
	case map[string]any:
		if b, ok := b.(map[string]any); ok {
			for k := range a {
				if _, ok := b[k]; !ok {
					return fmt.Sprintf("%s.%s (only now)", path, k)
				}
			}
			for k := range b {
				if _, ok := a[k]; !ok {
					return fmt.Sprintf("%s.%s (only before)", path, k)
				}
				if !reflect.DeepEqual(a[k], b[k]) {
					return firstDiff(a[k], b[k], path+"."+k)
				}
			}
		}
	case []any:
		if b, ok := b.([]any); ok && len(a) == len(b) {
			for i := range a {
				if !reflect.DeepEqual(a[i], b[i]) {
					return firstDiff(a[i], b[i], fmt.Sprintf("%s[%d]", path, i))
				}
			}
		}
	}
	return fmt.Sprintf("%s: now %#v, was %#v", path, a, b)
}

// A generator of awkward requests.
type reqGen struct{ r *rand.Rand }

var genStrings = []string{
	"", " ", "plain", "tab\tnewline\nreturn\r", `quote " backslash \ slash /`,
	"<b>html & co</b>", "ünïcødé 日本語 🐦‍⬛", "\u2028\u2029 separators", "\x00\x01\x1f controls",
	"bad utf-8 \xff\xfe end", "\xc3", "{\"json\": [1, 2]}", strings.Repeat("long ", 300),
}

func (g reqGen) str() string {
	if g.r.IntN(3) == 0 {
		return genStrings[g.r.IntN(len(genStrings))]
	}
	var b strings.Builder
	for n := g.r.IntN(6); n > 0; n-- {
		b.WriteString(genStrings[g.r.IntN(len(genStrings))])
	}
	return b.String()
}

var genArguments = []string{
	"", "   ", "{}", `{"path":"a.go"}`, ` {"path": "ü\n"} `, `{"nested":{"a":[1,2.5,true,null]}}`,
	`{"path":`, `[1,2]`, `"str"`, `42`, `null`, "{\"x\":\"\xff\"}", `{} {}`, "not json",
}

// schema makes a JSON-schema-like value of what tool schemas hold (decoded
// JSON and Go literals). Not json.Number: openai-go wrote it as a string,
// encoding/json as the number it is; no schema of ours holds one.
func (g reqGen) schema(depth int) any {
	switch k := g.r.IntN(8); {
	case depth > 3 || k < 2:
		return []any{"string", 1.5, 3, int64(1) << 60, 1e21, true, false, nil, g.str()}[g.r.IntN(9)]
	case k < 5:
		m := map[string]any{}
		for n := g.r.IntN(4); n > 0; n-- {
			m[g.str()] = g.schema(depth + 1)
		}
		return m
	default:
		var a []any
		for n := g.r.IntN(3); n > 0; n-- {
			a = append(a, g.schema(depth+1))
		}
		return a
	}
}

func (g reqGen) tool() Tool {
	t := Tool{Name: g.str(), Description: g.str()}
	switch g.r.IntN(4) {
	case 0: // nil: the default schema
	case 1:
		t.Parameters = map[string]any{}
	default:
		t.Parameters = map[string]any{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string"}, g.str(): g.schema(0)},
			"required":   []any{"path"},
			g.str():      g.schema(0),
		}
	}
	return t
}

func (g reqGen) parts(bad bool) []ContentPart {
	var ps []ContentPart
	for n := g.r.IntN(4); n > 0; n-- {
		switch g.r.IntN(3) {
		case 0:
			ps = append(ps, ContentPart{Type: "text", Text: g.str()})
		case 1:
			ps = append(ps, ContentPart{Type: "image", MimeType: "image/png", Data: "iVBORw0KGgo="})
		default:
			if bad && g.r.IntN(4) == 0 {
				ps = append(ps, []ContentPart{{Type: "image"}, {Type: "audio", Data: "x"}, {Type: "image", MimeType: "image/png"}}[g.r.IntN(3)])
			} else {
				ps = append(ps, ContentPart{Type: "text", Text: g.str(), MimeType: "ignored"})
			}
		}
	}
	return ps
}

func (g reqGen) message(bad bool) Message {
	roles := []Role{RoleSystem, RoleUser, RoleAssistant, RoleTool}
	m := Message{Role: roles[g.r.IntN(len(roles))], Content: g.str()}
	if g.r.IntN(3) == 0 {
		m.Parts = g.parts(bad)
	}
	switch m.Role {
	case RoleAssistant:
		for n := g.r.IntN(4); n > 0; n-- {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: g.str(), Name: g.str(), Arguments: genArguments[g.r.IntN(len(genArguments))]})
		}
		if g.r.IntN(2) == 0 {
			m.Reasoning = g.str()
		}
	case RoleTool:
		m.ToolCallID = "call_" + g.str()
		if bad && g.r.IntN(4) == 0 {
			m.ToolCallID = ""
		}
	}
	if bad && g.r.IntN(20) == 0 {
		m.Role = "wizard"
	}
	return m
}

func (g reqGen) request() Request {
	bad := g.r.IntN(10) == 0 // some requests may be invalid
	req := Request{Model: g.str(), MaxTokens: []int{0, 0, 1, 256, 1 << 20, -5}[g.r.IntN(6)],
		ReasoningHistory: []ReasoningHistory{ReasoningAuto, ReasoningStrip, ReasoningEcho, ReasoningRequire}[g.r.IntN(4)],
		ToolCallIDs:      []ToolCallIDStyle{ToolCallIDsAuto, ToolCallIDsAsIs, ToolCallIDsMistral}[g.r.IntN(3)]}
	if g.r.IntN(4) == 0 {
		req.Model = []string{"gpt-5", "o3-mini", "deepseek-v4-pro", "deepseek-r1", "devstral-small", "mistral-large-latest"}[g.r.IntN(6)]
	}
	for n := g.r.IntN(12); n > 0; n-- {
		req.Messages = append(req.Messages, g.message(bad))
	}
	for n := g.r.IntN(4) - 1; n > 0; n-- {
		req.Tools = append(req.Tools, g.tool())
	}
	return req
}

// TestRequestBodyMatchesOpenAIGo: for many generated requests the body Stream
// sends is the same JSON value as the one openai-go produced from
// buildParams, and the same requests are refused.
func TestRequestBodyMatchesOpenAIGo(t *testing.T) {
	g := reqGen{rand.New(rand.NewPCG(1, 2))}
	var refused int
	for i := range 3000 {
		req := g.request()
		old, oldErr := sdkBody(t, req)
		got, err := streamBody(t, req)
		if (oldErr != nil) != (err != nil) {
			t.Fatalf("request %d: openai-go error %v, now %v\n%#v", i, oldErr, err, req)
		}
		if err != nil {
			if err.Error() != oldErr.Error() {
				t.Fatalf("request %d: error %q, was %q", i, err, oldErr)
			}
			refused++
			continue
		}
		if a, b := decodeJSON(t, got), decodeJSON(t, old); !reflect.DeepEqual(a, b) {
			t.Fatalf("request %d: bodies differ at %s\n now %s\n was %s", i, firstDiff(a, b, "$"), got, old)
		}
	}
	if refused == 0 || refused > 1000 {
		t.Fatalf("%d of the requests refused: the generator does not cover both", refused)
	}
}

// longRequest is the request of a long session's next turn: 5,001 messages
// of ~1 KiB in BenchMessage's mix, and a few tools.
func longRequest() Request {
	req := Request{Model: "bench", Messages: []Message{{Role: RoleSystem, Content: "You are crow."}}}
	for i := range 5000 {
		content := strings.Repeat(fmt.Sprintf("line %d of a model reply. ", i), 40)
		switch i % 3 {
		case 0:
			req.Messages = append(req.Messages, Message{Role: RoleUser, Content: content})
		case 1:
			req.Messages = append(req.Messages, Message{Role: RoleAssistant, Content: content, ToolCalls: []ToolCall{
				{ID: fmt.Sprint("call_", i), Name: "read_file", Arguments: `{"path":"/src/main.go"}`}}})
		case 2:
			req.Messages = append(req.Messages, Message{Role: RoleTool, ToolCallID: fmt.Sprint("call_", i-1), Content: content})
		}
	}
	for _, name := range []string{"read_file", "write_file", "edit_file", "list_dir", "grep", "run"} {
		req.Tools = append(req.Tools, Tool{Name: name, Description: "Does " + name + ".", Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string", "description": "a path"}},
			"required":   []any{"path"},
		}})
	}
	return req
}

// BenchmarkRequestBody builds and encodes a long session's request: with
// openai-go's parameters as before, and as plain structs now.
func BenchmarkRequestBody(b *testing.B) {
	req := longRequest()
	b.Run("openai-go", func(b *testing.B) {
		for b.Loop() {
			params, err := buildParams(req)
			if err != nil {
				b.Fatal(err)
			}
			body, err := json.Marshal(params) // what the SDK does with them
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			body, err := requestBody(req, shapeFor(req))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
		}
	})
}
