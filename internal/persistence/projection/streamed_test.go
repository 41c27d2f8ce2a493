package projection_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
)

// chunkFrame is an agent_message_chunk (or thought) frame naming msgID.
func chunkFrame(kind, msgID, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":%q,"messageId":%q,"content":{"type":"text","text":%q}}}}`, kind, msgID, text)
}

// TestStreamedTextRebuiltFromFrames: an update that left its streamed
// bytes to the frames (persistence.Streamed) is rebuilt from the chunks
// naming its message, whether the frames come before the record or after
// it (a partial save is written before its chunk is sent); a cut inside a
// character moves to its start; frames that hold less than the record
// says are an error naming the event.
func TestStreamedTextRebuiltFromFrames(t *testing.T) {
	const content, reasoning = "héllo, wörld", "thinking"
	m := &persistence.Message{ID: 9, Seq: 2, Role: persistence.RoleAssistant, Content: content, Reasoning: reasoning,
		Status: persistence.StatusComplete, Streamed: persistence.Streamed{Content: 2, Reasoning: 5}}
	// Byte 2 is inside é: the record keeps "éllo, wörld" and names 1 byte.
	first := persistence.UpdateRecord(m, "", "")
	if first.ContentStreamed != 1 || first.Content != content[1:] || first.ReasoningStreamed != 5 || first.Reasoning != "ing" {
		t.Fatalf("record %+v", first)
	}
	m.Content += " and more"
	m.Streamed.Content = len(m.Content)
	second := persistence.UpdateRecord(m, content, reasoning)
	if second.ContentFrom != len(content) || second.ContentStreamed != len(" and more") || second.Content != "" || second.ReasoningStreamed != 0 {
		t.Fatalf("second record %+v", second)
	}
	frames := persistence.Event{Seq: 3, Kind: persistence.EventNotification, Direction: persistence.DirOut, Method: "session/update",
		Body: []byte(strings.Join([]string{
			chunkFrame("agent_thought_chunk", "msg_2", "think"),
			chunkFrame("agent_message_chunk", "msg_1", "another message's"),
			chunkFrame("agent_message_chunk", "msg_2", "h"),
			chunkFrame("user_message_chunk", "msg_2", "not the reply"),
			chunkFrame("agent_message_chunk", "msg_2", "éllo, wörld and more"),
		}, "\n"))}
	appended := persistence.RecordOf(&persistence.Message{ID: 9, Seq: 2, Role: persistence.RoleAssistant, Status: persistence.StatusStreaming})
	events := []persistence.Event{{Seq: 1, Kind: persistence.EventMessageAppended, Body: body(t, appended)},
		{Seq: 2, Kind: persistence.EventMessageUpdated, Body: body(t, first)}, frames,
		{Seq: 4, Kind: persistence.EventMessageUpdated, Body: body(t, second)}}
	st, err := projection.Rebuild("s", events)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Messages[0]; got.Content != m.Content || got.Reasoning != reasoning {
		t.Fatalf("rebuilt %q / %q, want %q / %q", got.Content, got.Reasoning, m.Content, reasoning)
	}

	// The retention pruned the frames (a gap in the seqs): the message's
	// text is not rebuilt, and says so; nothing fails.
	st, err = projection.Rebuild("s", []persistence.Event{events[0], events[1], events[3]})
	if err != nil || !st.Pruned[9] || st.Messages[0].Content != "" {
		t.Fatalf("rebuild without the pruned frames: %v %+v", err, st)
	}

	// The log lost the last chunk: the second record cannot be rebuilt.
	frames.Body = []byte(strings.Join(strings.Split(string(frames.Body), "\n")[:4], "\n"))
	events[2] = frames
	if _, err := projection.Rebuild("s", events); err == nil || !strings.Contains(err.Error(), "event 4") || !strings.Contains(err.Error(), "hold 1 bytes") {
		t.Fatalf("rebuild with a lost frame: %v", err)
	}
}
