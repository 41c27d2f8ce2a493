package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
)

// TestCancelFollowsItsRequest: a $/cancel_request is recorded after the
// request it names, also when the log holds that request back (a load's,
// kept for its session_loaded event; an over-size prompt, kept until its
// answer says whether it was refused as too large).
func TestCancelFollowsItsRequest(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, "sess_a")
	j := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: 1 << 40, MaxPromptBytes: 64})
	var want []string
	send := func(dir acp.Direction, frame string) {
		j.OnFrame(dir, []byte(frame))
		want = append(want, frame)
	}
	cancel := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}`, id)
	}
	cancelled := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32800,"message":"Request cancelled."}}`, id)
	}

	// A load cancelled during its replay (the replay itself is not kept).
	send(acp.Inbound, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"sess_a","cwd":"/tmp","mcpServers":[]}}`)
	j.OnFrame(acp.Outbound, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_a","update":{"sessionUpdate":"agent_message_chunk"}}}`))
	send(acp.Inbound, cancel(1))
	send(acp.Outbound, cancelled(1))
	// A load that succeeds, so the session is open for a prompt.
	j.OnFrame(acp.Inbound, []byte(`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"sess_a","cwd":"/tmp","mcpServers":[]}}`))
	j.OnFrame(acp.Outbound, []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`))
	j.Record(ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{})
	want = append(want, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"sess_a","cwd":"/tmp","mcpServers":[]}}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	// An over-size prompt, cancelled twice before its answer.
	send(acp.Inbound, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_a","prompt":[{"type":"text","text":"`+strings.Repeat("long ", 40)+`"}]}}`)
	send(acp.Inbound, cancel(3))
	send(acp.Inbound, cancel(3))
	send(acp.Outbound, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`)
	j.Close()

	evs, err := store.Events(ctx, "sess_a", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if back := framesOf(t, evs); strings.Join(back, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames back:\n%s\nwant each cancel after its request:\n%s", strings.Join(back, "\n"), strings.Join(want, "\n"))
	}
}
