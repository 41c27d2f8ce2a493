package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// refChunk is a plain encoding/json reading of a chunk, the reference
// DecodeChunk is checked against.
type refChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          refText `json:"content"`
			Refusal          refText `json:"refusal"`
			ReasoningContent refText `json:"reasoning_content"`
			Reasoning        refText `json:"reasoning"`
			ToolCalls        []struct {
				Index    *int    `json:"index"`
				ID       refText `json:"id"`
				Function struct {
					Name      refText         `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason refText `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     json.RawMessage `json:"prompt_tokens"`
		CompletionTokens json.RawMessage `json:"completion_tokens"`
		TotalTokens      json.RawMessage `json:"total_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type refText string

func (t *refText) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = refText(s)
	}
	return nil
}

func refCount(raw json.RawMessage) int {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f < 0 || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}

func refDecode(data []byte) (Chunk, error) {
	var r refChunk
	if err := json.Unmarshal(data, &r); err != nil {
		return Chunk{}, err
	}
	var c Chunk
	for _, ch := range r.Choices {
		cc := ChunkChoice{Index: ch.Index, FinishReason: string(ch.FinishReason), Delta: ChunkDelta{
			Content: string(ch.Delta.Content), Refusal: string(ch.Delta.Refusal),
			ReasoningContent: string(ch.Delta.ReasoningContent), Reasoning: string(ch.Delta.Reasoning)}}
		for _, tc := range ch.Delta.ToolCalls {
			t := ChunkToolCall{Index: tc.Index, ID: string(tc.ID), Name: string(tc.Function.Name)}
			var s string
			switch a := tc.Function.Arguments; {
			case len(a) == 0 || string(a) == "null":
			case json.Unmarshal(a, &s) == nil:
				t.Arguments = s
			default:
				t.Arguments = string(a)
			}
			cc.Delta.ToolCalls = append(cc.Delta.ToolCalls, t)
		}
		c.Choices = append(c.Choices, cc)
	}
	if r.Usage != nil {
		c.Usage = &ChunkUsage{PromptTokens: refCount(r.Usage.PromptTokens), CompletionTokens: refCount(r.Usage.CompletionTokens), TotalTokens: refCount(r.Usage.TotalTokens)}
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		c.Error = r.Error
	}
	return c, nil
}

// genChunk writes a random chunk as servers might: fields in any order,
// fields crow-acp ignores, values of unexpected types, escapes and
// non-ASCII text, arguments as strings or objects, counts as floats.
func genChunk(r *rand.Rand) string {
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	str := func() string {
		b, _ := json.Marshal(pick("", "x", "Hello, wörld", "tab\tquote\"back\\slash", "日本語 🐦", "\u2028", "</script>", strings.Repeat("ab", 40)))
		return string(b)
	}
	textish := func() string { return pick(str(), str(), str(), "null", "42", "true", `{"a":1}`, `["x"]`) }
	obj := func(fields []string) string {
		r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
		return "{" + strings.Join(fields, ",") + "}"
	}
	maybe := func(field string, p float64) []string {
		if r.Float64() < p {
			return []string{field}
		}
		return nil
	}
	toolCall := func() string {
		var f []string
		f = append(f, maybe(`"index":`+pick("0", "1", "2", "null"), 0.8)...)
		f = append(f, maybe(`"id":`+textish(), 0.5)...)
		f = append(f, maybe(`"type":"function"`, 0.5)...)
		fn := append(maybe(`"name":`+textish(), 0.6), maybe(`"arguments":`+pick(`"{\"path\":\"a.go\"}"`, `"{\"x\":"`, `""`, `{"path":"a.go"}`, `null`, `[1,2]`, `7`), 0.8)...)
		f = append(f, maybe(`"function":`+obj(fn), 0.9)...)
		return obj(f)
	}
	choice := func() string {
		var d []string
		for _, k := range []string{"content", "refusal", "reasoning_content", "reasoning", "role"} {
			d = append(d, maybe(`"`+k+`":`+textish(), 0.4)...)
		}
		if r.Float64() < 0.3 {
			var tcs []string
			for range r.IntN(3) {
				tcs = append(tcs, toolCall())
			}
			d = append(d, `"tool_calls":`+pick("["+strings.Join(tcs, ",")+"]", "null"))
		}
		f := []string{`"delta":` + obj(d)}
		f = append(f, maybe(`"index":`+pick("0", "1", "null"), 0.9)...)
		f = append(f, maybe(`"finish_reason":`+pick("null", `"stop"`, `"tool_calls"`, `"length"`, "3"), 0.7)...)
		f = append(f, maybe(`"logprobs":null`, 0.3)...)
		return obj(f)
	}
	var f []string
	f = append(f, maybe(`"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000`, 0.8)...)
	f = append(f, maybe(`"model":`+str(), 0.5)...)
	if r.Float64() < 0.9 {
		var cs []string
		for range r.IntN(3) {
			cs = append(cs, choice())
		}
		f = append(f, `"choices":`+pick("["+strings.Join(cs, ",")+"]", "null"))
	}
	num := func() string { return pick("0", "12", "12.0", "3.7", "null", `"5"`, "-1", "1e3", "1e40") }
	f = append(f, maybe(`"usage":`+pick("null", obj([]string{`"prompt_tokens":` + num(), `"completion_tokens":` + num(), `"total_tokens":` + num(), `"prompt_tokens_details":{"cached_tokens":0}`})), 0.4)...)
	f = append(f, maybe(`"error":`+pick("null", `{"message":"overloaded"}`, `"boom"`), 0.1)...)
	f = append(f, maybe(`"system_fingerprint":`+pick("null", `"fp_1"`), 0.3)...)
	return obj(f)
}

// DecodeChunk reads every chunk a server might send as a plain
// encoding/json reading of the same fields does.
func TestDecodeChunkMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		in := genChunk(r)
		got, err := DecodeChunk([]byte(in))
		want, werr := refDecode([]byte(in))
		if (err != nil) != (werr != nil) {
			t.Fatalf("case %d: %s\nerror %v, reference error %v", i, in, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: %s\n got %s\nwant %s", i, in, dump(got), dump(want))
		}
	}
}

// Malformed input fails as it does for encoding/json.
func TestDecodeChunkRejectsWhatEncodingJSONRejects(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `{"choices":[}`, `{"a":1,}`, `{"a":01}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{} {}`, `nul`, `{"choices":[{"delta":{"content":"x"}}]`} {
		_, err := DecodeChunk([]byte(in))
		_, werr := refDecode([]byte(in))
		if err == nil || werr == nil {
			t.Errorf("%q: error %v, reference error %v; want both to fail", in, err, werr)
		}
	}
}

func dump(c Chunk) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%+v usage=%+v error=%s", c.Choices, c.Usage, c.Error)
	for _, ch := range c.Choices {
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index != nil {
				fmt.Fprintf(&b, " [tool index %d]", *tc.Index)
			}
		}
	}
	return b.String()
}
