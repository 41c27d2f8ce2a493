package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// POST /v1/responses answers with OpenAI's Responses API stream
// (developers.openai.com/api/reference/resources/responses/streaming-events):
// response.created, then for a Reply's Reasoning a reasoning item whose
// summary streams as response.reasoning_summary_text.delta (with
// encrypted_content "enc_N"), the Text as response.output_text.delta, each
// tool call as a function_call item with response.function_call_arguments
// .delta, and response.completed with the usage. Every event carries an
// "event:" line as OpenAI sends it.
//
// Like OpenAI with store off, the server refuses a request that sends back
// a function_call of its last response, made after a reasoning item,
// without that reasoning item before it (OpenAI's reasoning guide: pass
// back the reasoning items returned with the last function call): 400 "Item 'fc_…' of type 'function_call' was
// provided without its required 'reasoning' item: 'rs_…'." (reported in
// openai/openai-agents-python and openai/codex issue threads).

func (s *Server) responsesRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/responses", s.responses)
}

// responsesRequest is what the fake reads of a Responses request.
type responsesRequest struct {
	Model     string            `json:"model"`
	Input     []json.RawMessage `json:"input"`
	Reasoning struct {
		Summary string `json:"summary"`
	} `json:"reasoning"`
}

type inputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	CallID string `json:"call_id"`
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error())
		return
	}
	var req responsesRequest
	if !s.accept(w, r, body, &req) {
		return
	}
	if msg := s.checkReasoningItems(req); msg != "" {
		s.record(body, r.Header)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": msg, "type": "invalid_request_error", "param": "input", "code": nil}})
		return
	}
	reply, n := s.next(body, r.Header)
	s.mu.Lock()
	s.callReasoning = nil // only the last response's calls need their reasoning back
	s.mu.Unlock()
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.ErrorBody != "" {
			writeRawError(w, reply.Status, reply.ErrorBody)
			return
		}
		writeError(w, reply.Status, reply.Text)
		return
	}
	if reply.RawSSE != "" { // a provider's own event stream, byte for byte
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, reply.RawSSE)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var buf bytes.Buffer
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(fields)
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", typ, b)
	}
	id := "resp_fake_" + strconv.Itoa(n)
	emit("response.created", map[string]any{"response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": req.Model, "output": []any{}}})
	out := 0
	var reasoningID string
	if reply.Reasoning != "" {
		reasoningID = fmt.Sprintf("rs_fake_%d", n)
		enc := fmt.Sprintf("enc_%d", n)
		emit("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"id": reasoningID, "type": "reasoning", "summary": []any{}}})
		summary := []any{}
		if req.Reasoning.Summary != "" { // summaries come only when asked for
			emit("response.reasoning_summary_part.added", map[string]any{"item_id": reasoningID, "output_index": out, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
			for _, piece := range splitWords(reply.Reasoning) {
				emit("response.reasoning_summary_text.delta", map[string]any{"item_id": reasoningID, "output_index": out, "summary_index": 0, "delta": piece})
			}
			summary = []any{map[string]any{"type": "summary_text", "text": reply.Reasoning}}
		}
		emit("response.output_item.done", map[string]any{"output_index": out, "item": map[string]any{
			"id": reasoningID, "type": "reasoning", "encrypted_content": enc, "summary": summary}})
		out++
	}
	if reply.Text != "" {
		msgID := fmt.Sprintf("msg_fake_%d", n)
		emit("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"id": msgID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, piece := range reply.textPieces() {
			emit("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": out, "content_index": 0, "delta": piece, "logprobs": []any{}})
		}
		emit("response.output_item.done", map[string]any{"output_index": out, "item": map[string]any{"id": msgID, "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}})
		out++
	}
	for i, tc := range reply.ToolCalls {
		fcID := fmt.Sprintf("fc_fake_%d_%d", n, i)
		callID := tc.ID
		if callID == "" {
			callID = fmt.Sprintf("call_fake_%d_%d", n, i)
		}
		if reasoningID != "" {
			s.mu.Lock()
			if s.callReasoning == nil {
				s.callReasoning = make(map[string]string)
			}
			s.callReasoning[callID] = reasoningID
			s.mu.Unlock()
		}
		emit("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"id": fcID, "type": "function_call", "call_id": callID, "name": tc.Name, "arguments": "", "status": "in_progress"}})
		for _, piece := range splitN(tc.Arguments, 3) {
			emit("response.function_call_arguments.delta", map[string]any{"item_id": fcID, "output_index": out, "delta": piece})
		}
		emit("response.output_item.done", map[string]any{"output_index": out, "item": map[string]any{"id": fcID, "type": "function_call", "call_id": callID, "name": tc.Name, "arguments": tc.Arguments, "status": "completed"}})
		out++
	}
	u := reply.usage(len(body))
	emit("response.completed", map[string]any{"response": map[string]any{"id": id, "object": "response", "status": "completed", "model": req.Model,
		"usage": map[string]any{"input_tokens": u.PromptTokens, "output_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
	_, _ = w.Write(buf.Bytes())
}

// checkReasoningItems enforces OpenAI's rule: a function_call this server
// produced after a reasoning item comes back with that item before it.
func (s *Server) checkReasoningItems(req responsesRequest) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool)
	for _, raw := range req.Input {
		var it inputItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Type {
		case "reasoning":
			seen[it.ID] = true
		case "function_call":
			if rs, ok := s.callReasoning[it.CallID]; ok && !seen[rs] {
				return fmt.Sprintf("Item '%s' of type 'function_call' was provided without its required 'reasoning' item: '%s'.", it.CallID, rs)
			}
		}
	}
	return ""
}
