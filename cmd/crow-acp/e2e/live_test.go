package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestCommandOutputArrivesLive (issue 41; claude-agent-acp #651): a client
// without a terminal of its own sees a command printing a line a second
// for five seconds as at least three tool_call_update frames with its
// output, before the call completes.
func TestCommandOutputArrivesLive(t *testing.T) {
	model, _, env, cwd := procSetup(t)
	model.Enqueue(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{runCall("c1", "for i in 1 2 3 4 5; do echo tick $i; sleep 1; done")}},
		fakemodel.Reply{Text: "done"})
	c := startClient(t, env)
	sid := c.newSession(cwd)
	id := c.startPrompt(sid, "run it")
	live, completed := 0, false
	deadline := time.Now().Add(60 * time.Second)
	for {
		f := c.p.recv(time.Until(deadline))
		var fr struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Update struct {
					Kind    string          `json:"sessionUpdate"`
					Status  string          `json:"status"`
					Content json.RawMessage `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		mustJSON(t, f, &fr)
		u := fr.Params.Update
		var content []struct {
			Content struct{ Text string } `json:"content"`
		}
		if u.Kind == "tool_call_update" && len(u.Content) > 0 {
			mustJSON(t, u.Content, &content)
		}
		switch {
		case fr.Method == "session/request_permission":
			c.p.send(`{"jsonrpc":"2.0","id":` + string(fr.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`)
		case u.Kind == "tool_call_update" && u.Status == "completed":
			completed = true
		case u.Kind == "tool_call_update" && len(content) > 0 && strings.Contains(content[0].Content.Text, "tick"):
			if completed {
				t.Errorf("live output after the call completed: %s", f)
			}
			live++
		case fr.Method == "" && string(fr.ID) == id:
			if !strings.Contains(string(f), "end_turn") {
				t.Fatalf("prompt ended: %s", f)
			}
			if !completed || live < 3 {
				t.Fatalf("%d live updates before the command completed (completed=%v), want at least 3", live, completed)
			}
			return
		}
	}
}
