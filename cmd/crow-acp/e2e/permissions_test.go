package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/acptest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestRevokeReachesARunningServer: an "Always allow" granted in a running
// server is listed by `crow-acp permissions list` from another process and,
// once revoked there, the running server's next matching tool call asks
// again: the agent reads the rules from the store on every decision.
func TestRevokeReachesARunningServer(t *testing.T) {
	onBothStores(t, testRevokeReachesARunningServer)
}

func testRevokeReachesARunningServer(t *testing.T, dsn string) {
	model, _, env, cwd := procSetupOn(t, dsn)
	env["CROW_MODEL"] = fakemodel.ModelID
	p := startProc(t, env)
	v := acptest.MustValidatorFor(t, "sdk-2.4.0/v1/schema.unstable.json")
	methods := map[string]string{}
	next := 0
	// turn sends a prompt whose model reply runs the command line, answers
	// each permission question with answer, and returns how many there were.
	turn := func(sid, line, answer string) int {
		t.Helper()
		model.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{runCall("call_"+strconv.Itoa(next), line)}},
			fakemodel.Reply{Text: "Done."})
		_, asked := request(t, p, v, methods, &next, "session/prompt",
			`{"sessionId":`+quote(sid)+`,"prompt":[{"type":"text","text":"run it"}]}`, answer)
		return asked
	}
	request(t, p, v, methods, &next, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, "")
	created, _ := request(t, p, v, methods, &next, "session/new", `{"cwd":`+quote(cwd)+`,"mcpServers":[]}`, "")
	sid := sessionIDOf(t, [][]byte{created})

	if n := turn(sid, "echo one", "allow_always"); n != 1 {
		t.Fatalf("first call: %d permission questions, want 1", n)
	}
	if n := turn(sid, "echo two", ""); n != 0 {
		t.Fatalf("after Always allow: %d permission questions, want none", n)
	}

	// Another process lists the rule the running server stored.
	out := mustRun(t, env, "permissions", "list", "--json", "--cwd", cwd)
	var rule struct {
		ID        int64   `json:"id"`
		Decision  string  `json:"decision"`
		Key       string  `json:"key"`
		Cwd       string  `json:"cwd"`
		GrantedAt *string `json:"grantedAt"`
		SessionID string  `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(out), &rule); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("permissions list --json: %q (%v); want one rule", out, err)
	}
	// The session it came from is known once the agent passes it
	// (persistence.PermissionRule.SessionID); until then it is "".
	if rule.Decision != "allow" || !strings.Contains(rule.Key, "echo") || rule.Cwd != cwd || rule.GrantedAt == nil ||
		(rule.SessionID != "" && rule.SessionID != sid) {
		t.Fatalf("listed rule: %+v", rule)
	}
	table := mustRun(t, env, "permissions", "list")
	if !strings.Contains(table, strconv.FormatInt(rule.ID, 10)) || !strings.Contains(table, cwd) {
		t.Errorf("permissions list:\n%s", table)
	}

	// An unknown id (flags after it, as people type them) is exit 2 and
	// revokes nothing.
	code, _, stderr := runCmd(t, command(t, env, "permissions", "revoke", strconv.FormatInt(rule.ID+1000, 10), "--cwd", cwd))
	if code != exitUsage || !strings.Contains(stderr, "nothing was revoked") {
		t.Fatalf("revoking an unknown id: exit %d, %q; want 2", code, stderr)
	}
	if n := turn(sid, "echo three", ""); n != 0 {
		t.Fatalf("after a failed revoke: %d permission questions, want none", n)
	}

	out = mustRun(t, env, "permissions", "revoke", strconv.FormatInt(rule.ID, 10))
	if !strings.HasPrefix(out, "Revoked 1 permission rule:\n") || !strings.Contains(out, rule.Key) {
		t.Fatalf("permissions revoke: %q", out)
	}
	if n := turn(sid, "echo four", "reject_once"); n != 1 {
		t.Fatalf("after the revoke the running server asked %d times, want 1", n)
	}
	p.close()
}

// request sends method with params as the next request and reads frames
// until its response, answering each session/request_permission with
// answer (an option id; "" fails the test). Every frame the agent writes
// is checked against the ACP schema. It returns the response and how many
// questions came.
func request(t *testing.T, p *proc, v *acptest.Validator, methods map[string]string, next *int, method, params, answer string) ([]byte, int) {
	t.Helper()
	*next++
	id := strconv.Itoa(*next)
	methods[id] = method
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	asked := 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		f := p.recv(time.Until(deadline))
		if err := v.ValidateAgentFrame(f, func(raw json.RawMessage) string { return methods[string(raw)] }); err != nil {
			t.Errorf("%s: %v", method, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		mustJSON(t, f, &m)
		switch {
		case m.Method == "session/request_permission":
			asked++
			if answer == "" {
				t.Fatalf("unexpected permission question: %s", f)
			}
			p.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"` + answer + `"}}}`)
		case m.Method == "" && string(m.ID) == id:
			if errorCode(t, f) != 0 {
				t.Fatalf("%s: %s", method, f)
			}
			return f, asked
		}
	}
}
