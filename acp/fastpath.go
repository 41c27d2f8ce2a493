package acp

import "encoding/json"

// Streaming text is the hottest path: one session/update per model token.
// The generic encoder re-validates every nested MarshalJSON result, which
// costs ~10x more than writing the frame directly. textChunkFrame writes
// the same bytes for the plain case (a text block without annotations or
// _meta); the test pins it to the generic encoding.

// textChunkFrame returns the frame for n, or nil when n is not a plain
// message/thought text chunk.
func textChunkFrame(n *SessionNotification) []byte {
	var kind string
	var c *ContentChunk
	switch u := n.Update; {
	case u.AgentMessageChunk != nil:
		kind, c = "agent_message_chunk", u.AgentMessageChunk
	case u.AgentThoughtChunk != nil:
		kind, c = "agent_thought_chunk", u.AgentThoughtChunk
	case u.UserMessageChunk != nil:
		kind, c = "user_message_chunk", u.UserMessageChunk
	default:
		return nil
	}
	t := c.Content.Text
	if t == nil || t.Annotations != nil || t.Meta != nil || c.Meta != nil || n.Meta != nil || c.MessageID != "" {
		return nil
	}
	sid, err1 := json.Marshal(n.SessionID)
	text, err2 := json.Marshal(t.Text)
	if err1 != nil || err2 != nil {
		return nil
	}
	// Room for the fixed parts and the newline writeFrame adds.
	b := make([]byte, 0, 160+len(sid)+len(text))
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	b = append(b, sid...)
	b = append(b, `,"update":{"sessionUpdate":"`...)
	b = append(b, kind...)
	b = append(b, `","content":{"type":"text","text":`...)
	b = append(b, text...)
	b = append(b, "}}}}"...)
	return b
}
