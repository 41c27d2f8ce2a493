package acp

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestTextChunkFrameMatchesGenericEncoding(t *testing.T) {
	texts := []string{"", "hello", "line\nbreak \"quoted\" \\ tab\t", "<html> & \u2028 é 中文 🐦", "\x00\x1f", string([]byte{0xff, 'a'})}
	for _, text := range texts {
		for _, u := range []SessionUpdate{
			{AgentMessageChunk: &ContentChunk{Content: TextBlock(text)}},
			{AgentThoughtChunk: &ContentChunk{Content: TextBlock(text)}},
			{UserMessageChunk: &ContentChunk{Content: TextBlock(text)}},
		} {
			n := &SessionNotification{SessionID: "sess_\"x\"", Update: u}
			fast := textChunkFrame(n)
			generic, err := json.Marshal(wireNotification{JSONRPC: "2.0", Method: "session/update", Params: n})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fast, generic) {
				t.Errorf("fast path differs for %q:\nfast    %s\ngeneric %s", text, fast, generic)
			}
		}
	}
	withMeta := &SessionNotification{SessionID: "s", Update: SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock("x"), MessageID: "m1"}}}
	if textChunkFrame(withMeta) != nil {
		t.Error("fast path must not take chunks with a messageId")
	}
	if textChunkFrame(&SessionNotification{SessionID: "s", Update: SessionUpdate{Plan: &Plan{}}}) != nil {
		t.Error("fast path must not take non-chunk updates")
	}
}
