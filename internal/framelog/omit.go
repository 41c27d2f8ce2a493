package framelog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// refusedAsTooLarge reports an error answer refusing a prompt for its size:
// -32602 with data.limit and a data.size over it (agent.checkPromptSize).
func refusedAsTooLarge(errObj json.RawMessage) bool {
	var e struct {
		Code int `json:"code"`
		Data struct {
			Limit int64 `json:"limit"`
			Size  int64 `json:"size"`
		} `json:"data"`
	}
	if len(errObj) == 0 || json.Unmarshal(errObj, &e) != nil {
		return false
	}
	return e.Code == -32602 && e.Data.Limit > 0 && e.Data.Size > e.Data.Limit
}

// omittedPrompt is what the frame log keeps of a request refused as too
// large (a prompt, a session's systemPrompt): the request's id, method and
// session, its size and SHA-256, not its body.
func omittedPrompt(frame []byte, method, sessionID string) []byte {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(frame, &env)
	sum := sha256.Sum256(frame)
	params := map[string]string{}
	if sessionID != "" {
		params["sessionId"] = sessionID
	}
	type omitted struct {
		Reason string `json:"reason"`
		Bytes  int    `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	return mustJSON(struct {
		JSONRPC string            `json:"jsonrpc"`
		ID      json.RawMessage   `json:"id,omitempty"`
		Method  string            `json:"method"`
		Params  map[string]string `json:"params"`
		Omitted omitted           `json:"omitted"`
	}{"2.0", env.ID, method, params,
		omitted{"too large: refused, body not kept", len(frame), hex.EncodeToString(sum[:])}})
}

// mustJSON is an event body: v as JSON, or {} when v is nil or does not
// encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if v == nil || err != nil {
		return []byte("{}")
	}
	return b
}
