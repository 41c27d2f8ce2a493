package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestFrameLogOrdersEveryWrite drives the binary through a prompt, /compact
// and _crow/compaction/expand, collapse and delete, and reads the frame log
// back: every projection event a request caused carries the connection and
// comes after that request's frame (issue 17: the compaction undo methods
// used to write past the journal, with no connection and before their
// request).
func TestFrameLogOrdersEveryWrite(t *testing.T) {
	bin := testBinary(t)
	model, db, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "two words"})
	env["CROW_COMPACT_KEEP_RECENT"] = "2"
	c := newLeaseClient(t, bin, env)
	sid := c.newSession(cwd)
	c.prompt(sid, strings.Repeat("a long first question ", 100))
	c.prompt(sid, strings.Repeat("a long second question ", 100))
	c.prompt(sid, "three")
	c.id++
	c.p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/compact"}]}}`, c.id, sid))
	c.p.until(fmt.Sprint(c.id), 10*time.Second)
	var list struct {
		Result struct {
			Compactions []struct {
				ID int64 `json:"compactionId"`
			} `json:"compactions"`
		} `json:"result"`
	}
	res := c.call("_crow/compaction/list", `{"sessionId":"`+sid+`"}`)
	if err := json.Unmarshal([]byte(res), &list); err != nil || len(list.Result.Compactions) != 1 {
		t.Fatalf("_crow/compaction/list: %s", res)
	}
	params := fmt.Sprintf(`{"sessionId":%q,"compactionId":%d}`, sid, list.Result.Compactions[0].ID)
	for _, op := range []string{"expand", "collapse", "delete"} {
		if res := c.call("_crow/compaction/"+op, params); !strings.Contains(res, `"result"`) {
			t.Fatalf("%s: %s", op, res)
		}
	}
	c.p.close()

	evs := storedEvents(t, db, sid)
	// Each projection event follows the latest request frame before it,
	// which must be one that writes; none may precede its request.
	var request string
	var changed []string
	for _, e := range evs {
		switch {
		case e.Kind == persistence.EventRequest && e.Direction == persistence.DirIn:
			request = e.Method
		case e.Kind == persistence.EventMessageAppended, e.Kind == persistence.EventMessageUpdated, e.Kind == persistence.EventMessagesChanged:
			if e.ConnectionID == "" {
				t.Errorf("%s event (seq %d) after %q has no connection", e.Kind, e.Seq, request)
			}
			if e.Kind == persistence.EventMessagesChanged {
				changed = append(changed, request)
			}
		}
	}
	want := "[session/prompt _crow/compaction/expand _crow/compaction/collapse _crow/compaction/delete]"
	if fmt.Sprint(changed) != want {
		t.Errorf("messages_changed events follow the requests %v, want %s", changed, want)
	}
}
