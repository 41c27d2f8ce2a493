package agent

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// withSubagents initializes a as a client that shows subagents.
func withSubagents(t *testing.T, a *Agent) {
	t.Helper()
	on := json.RawMessage(`{}`)
	if _, err := a.Initialize(context.Background(), &acp.InitializeRequest{ProtocolVersion: 1,
		ClientCapabilities: acp.ClientCapabilities{Subagents: &on}}); err != nil {
		t.Fatal(err)
	}
}

// The token budget of a child counts what the endpoint reports: past it
// the child stops after the request that crossed it, and the parent's
// model is told which limit stopped it.
func TestSubagentTokenLimit(t *testing.T) {
	ctx := context.Background()
	a, rec, m := newTestAgent(t, Config{Model: "m", Subagents: SubagentLimits{MaxTokens: 5000}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "task", Arguments: `{"description":"Look","prompt":"Look around."}`}}},
		fakemodel.Reply{Text: "Listing.", ToolCalls: []fakemodel.ToolCall{{ID: "call_c1", Name: "list_files", Arguments: `{}`}},
			Usage: &fakemodel.Usage{PromptTokens: 6000, CompletionTokens: 10}},
		fakemodel.Reply{Text: "Done."},
	)
	withSubagents(t, a)
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("look")}})
	if err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("prompt: %v %v", res, err)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (the child stops after its first)", len(reqs))
	}
	if !strings.Contains(string(reqs[2]), "its limit of 5000 tokens (setting limits.subagent_tokens)") || !strings.Contains(string(reqs[2]), "Listing.") {
		t.Fatalf("the parent's model should get the child's last answer and the limit, got %s", reqs[2])
	}
	var idle *acp.SubagentUpdate
	rec.mu.Lock()
	for _, u := range rec.updates {
		if u.Kind() != "subagent_update" {
			continue
		}
		var v acp.SubagentUpdate
		if err := json.Unmarshal(u.Other, &v); err != nil {
			t.Fatal(err)
		}
		if v.State != nil && v.State.State == acp.SubagentIdle {
			idle = &v
		}
	}
	rec.mu.Unlock()
	if idle == nil || idle.State.StopReason != acp.StopMaxTokens || idle.State.Usage == nil || idle.State.Usage.TotalTokens != 6010 {
		t.Fatalf("idle subagent_update: %+v", idle)
	}
}

// The task tool is offered only to a client that shows subagents, never
// in a child, and not when turned off.
func TestTaskToolOffered(t *testing.T) {
	ctx := context.Background()
	parent := &persistence.Session{ID: "sess_p", Metadata: encodeMeta(sessionMeta{})}
	child := &persistence.Session{ID: "sess_c", Metadata: encodeMeta(sessionMeta{Subagent: &subagentLink{ParentSessionID: "sess_p", ParentToolCallID: "call_1"}})}
	has := func(a *Agent, s *persistence.Session) bool {
		for _, tl := range a.turns.tools(a.sessions.get(s.ID), s) {
			if tl.Definition().Name == subagentTool {
				return true
			}
		}
		return false
	}
	plain, _, _ := newTestAgent(t, Config{Model: "m"})
	if _, err := plain.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if has(plain, parent) {
		t.Error("offered to a client that did not advertise subagents")
	}
	a, _, _ := newTestAgent(t, Config{Model: "m"})
	withSubagents(t, a)
	if !has(a, parent) {
		t.Error("not offered to a client that shows subagents")
	}
	if has(a, child) {
		t.Error("offered in a child: depth must be one")
	}
	for _, tl := range a.turns.tools(a.sessions.get(child.ID), child) {
		if n := tl.Definition().Name; n != "read_file" && n != "list_files" && n != "search" && n != "read_output" {
			t.Errorf("a child is offered %s, which is not read-only", n)
		}
	}
	off, _, _ := newTestAgent(t, Config{Model: "m", Subagents: SubagentLimits{MaxConcurrent: -1}})
	withSubagents(t, off)
	if has(off, parent) {
		t.Error("offered although turned off")
	}
}

// session/delete of a parent deletes its subagents' sessions (hidden from
// session/list, a client could not delete them), and nothing else.
func TestDeleteParentDeletesChildren(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newTestAgent(t, Config{Model: "m"})
	dir := t.TempDir()
	mk := func(id string, parent string) {
		m := sessionMeta{}
		if parent != "" {
			m.Subagent = &subagentLink{ParentSessionID: parent, ParentToolCallID: "call_1"}
		}
		if err := a.store.CreateSession(ctx, &persistence.Session{ID: id, Cwd: dir, Metadata: encodeMeta(m)}); err != nil {
			t.Fatal(err)
		}
	}
	mk("sess_parent", "")
	mk("sess_child", "sess_parent")
	mk("sess_other", "")
	mk("sess_other_child", "sess_other")
	if _, err := a.DeleteSession(ctx, &acp.DeleteSessionRequest{SessionID: "sess_parent"}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"sess_parent": false, "sess_child": false, "sess_other": true, "sess_other_child": true} {
		_, err := a.store.GetSession(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("%s exists: %v, want %v (%v)", id, got, want, err)
		}
	}
}

// Claude Code's name for its subagent tool runs ours.
func TestTaskAlias(t *testing.T) {
	schemas := map[string]toolSchema{subagentTool: schemaOf(taskTool{}.Definition().Parameters)}
	r, ok := repairCall("Task", `{"description":"d","prompt":"p","subagent_type":"Explore"}`, schemas)
	if !ok || r.Name != subagentTool {
		t.Fatalf("Task ran as %q (%v)", r.Name, ok)
	}
}

func TestTaskTitle(t *testing.T) {
	for _, c := range []struct{ desc, prompt, want string }{
		{"Find  the\tgreeting", "x", "Find the greeting"},
		{"", "Where is main?\nLook in cmd/.", "Where is main?"},
		{"a\x1b[31mred\x07", "x", "a[31mred"},
		{strings.Repeat("word ", 40), "x", strings.TrimSpace(strings.Repeat("word ", 15)) + "…"},
	} {
		if got := taskTitle(c.desc, c.prompt); got != c.want {
			t.Errorf("taskTitle(%q, %q) = %q, want %q", c.desc, c.prompt, got, c.want)
		}
	}
}

// FuzzTaskArgs: whatever the model sends as the task tool's arguments,
// Prepare answers an error or an action whose title is one line of valid
// UTF-8 without control characters, of bounded length.
func FuzzTaskArgs(f *testing.F) {
	for _, seed := range []string{
		`{"description":"Find the greeting","prompt":"Find it."}`,
		`{"description":"a\u001b[2Jb\u0000c","prompt":"x"}`,
		"{\"description\":\"\xff\xfe\",\"prompt\":\"\xc3\x28\"}",
		`{"prompt":"` + strings.Repeat("x", maxTaskBytes+1) + `"}`,
		`{"description":"` + strings.Repeat("é", 500) + `","prompt":"p"}`,
		`{"prompt":""}`, `null`, `[]`, `{"prompt":1}`, ``,
	} {
		f.Add([]byte(seed))
	}
	tt := taskTool{}
	f.Fuzz(func(t *testing.T, raw []byte) {
		act, err := tt.Prepare(&tool.Env{}, raw)
		if err != nil {
			return
		}
		title := strings.TrimPrefix(act.Title, "Subagent: ")
		if !utf8.ValidString(title) || utf8.RuneCountInString(title) > maxTaskTitleRunes || strings.ContainsAny(title, "\n\r\t\x1b\x00") {
			t.Fatalf("title %q", title)
		}
	})
}

// A parent's cost includes what its subagents' model requests cost.
func TestSubagentCostAddsToParent(t *testing.T) {
	ctx := context.Background()
	priced := request.Model{Name: "m", InputPrice: 1, OutputPrice: 2, PricesSet: true, Currency: "USD"}
	a, _, _ := newTestAgent(t, Config{Model: "m", Models: []request.Model{priced}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "task", Arguments: `{"description":"Look","prompt":"Look around."}`}},
			Usage: &fakemodel.Usage{PromptTokens: 1000, CompletionTokens: 0}},
		fakemodel.Reply{Text: "Found it.", Usage: &fakemodel.Usage{PromptTokens: 2000, CompletionTokens: 500}},
		fakemodel.Reply{Text: "Done.", Usage: &fakemodel.Usage{PromptTokens: 3000, CompletionTokens: 0}},
	)
	withSubagents(t, a)
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("look")}}); err != nil {
		t.Fatal(err)
	}
	stored, err := a.store.GetSession(ctx, s.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	// Parent: 1000 + 3000 input tokens at $1/M; child: 2000 at $1/M and 500 output at $2/M.
	if got, want := decodeMeta(stored.Metadata).Cost["USD"], 0.004+0.003; math.Abs(got-want) > 1e-9 {
		t.Errorf("the parent's cost is %v USD, want %v (its own and its subagent's)", got, want)
	}
}
