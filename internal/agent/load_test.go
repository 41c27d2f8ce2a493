package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func newTestModel(m *fakemodel.Server) provider.Client {
	return provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
}

// readCounter counts the message rows a store hands out.
type readCounter struct {
	persistence.Store
	rows atomic.Int64
}

func (c *readCounter) Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error) {
	msgs, err := c.Store.Messages(ctx, sessionID, f)
	c.rows.Add(int64(len(msgs)))
	return msgs, err
}

// storedSession makes a session of turns prompts with a model of a 100,000
// token window, and closes the agent that made it.
func storedSession(t *testing.T, turns int) (persistence.Store, string, *fakemodel.Server) {
	t.Helper()
	ctx := context.Background()
	a, _, m := newTestAgent(t, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 100000}}})
	m.SetFallback(fakemodel.Reply{Text: prose(5, 100)})
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for turn := 0; turn < turns; turn++ {
		if _, err := prompt(a, s.SessionID, prose(turn, 250)); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	return a.store.(persistence.Store), s.SessionID, m
}

// TestLoadReadsMessagesOnce: session/load reads the session's messages
// once; the compaction check on load (which runs, the model having a known
// window) measures the active ones from that read instead of reading them
// again.
func TestLoadReadsMessagesOnce(t *testing.T) {
	ctx := context.Background()
	stored, id, m := storedSession(t, 6)
	all, err := stored.Messages(ctx, id, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	store := &readCounter{Store: stored}
	a := New(&recorder{}, store, newTestModel(m), Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 100000}}}, nil)
	t.Cleanup(a.Close)
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if got := store.rows.Load(); got != int64(len(all)) {
		t.Fatalf("session/load read %d message rows for a session of %d", got, len(all))
	}
}

// TestLoadAnswersBeforeCompaction: the compaction check on load (token
// counting with the model's vocabulary, and a compaction when the stored
// context is over the threshold) runs after the session/load response, not
// before it, and still before the next message: the session is compacted
// when the client sends its next request.
func TestLoadAnswersBeforeCompaction(t *testing.T) {
	ctx := context.Background()
	store, id, m := storedSession(t, 12)
	small := Config{Model: "small", Models: []request.Model{{Name: "small", ContextWindow: 4096}}}

	var compactedAtResponse atomic.Int32
	compactedAtResponse.Store(-1)
	opts := acp.Options{OnFrame: func(dir acp.Direction, raw []byte) {
		if dir == acp.Outbound && bytes.HasPrefix(raw, []byte(`{"jsonrpc":"2.0","id":2,"result"`)) {
			list, _ := store.Compactions(context.Background(), id)
			compactedAtResponse.Store(int32(len(list)))
		}
	}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := acp.NewConn(inR, outW, opts)
	a := New(conn, store, newTestModel(m), small, nil)
	served := make(chan struct{})
	go func() { _ = conn.Serve(ctx, a); a.Close(); outW.Close(); close(served) }()
	client := acp.NewClientConn(outR, inW, nil, acp.Options{})
	if _, err := client.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	// The next request is handled after the load's follow-up work.
	if _, err := client.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		t.Fatal(err)
	}
	list, err := store.Compactions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	inW.Close()
	<-served
	_ = client.Close()
	if got := compactedAtResponse.Load(); got != 0 {
		t.Fatalf("%d compactions when the session/load response was written, want 0 (the check runs after it)", got)
	}
	if len(list) == 0 {
		t.Fatal("the session was not compacted before the next request")
	}
}

// Issue 19 item 4 after a load: the first turn after session/load starts
// from the messages the load read (and the compaction check counted), and
// reads from the store only the new prompt, with the check run (a known
// window) and without it.
func TestFirstTurnAfterLoadReadsOnlyNew(t *testing.T) {
	for _, cfg := range []Config{
		{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 100000}}},
		{Model: "m", NoTools: true},
		// Another tokenizer than the stored counts': the load counts in
		// memory and the first turn stores those counts.
		{Model: "gpt-4o", Models: []request.Model{{Name: "gpt-4o", ContextWindow: 100000}}},
	} {
		t.Run(cfg.Model, func(t *testing.T) {
			ctx := context.Background()
			stored, id, m := storedSession(t, 6)
			store := &viewReads{Store: stored}
			a := New(&recorder{}, store, newTestModel(m), cfg, nil)
			t.Cleanup(a.Close)
			if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			store.mu.Lock()
			store.read = 0
			store.mu.Unlock()
			if _, err := prompt(a, id, "the first turn after the load"); err != nil {
				t.Fatal(err)
			}
			store.mu.Lock()
			read := store.read
			store.mu.Unlock()
			if read != 1 {
				t.Fatalf("the first turn after the load read %d messages for its context, want the 1 new one", read)
			}
			checkView(t, a, id, "after the first turn after the load")
			msgs, err := stored.Messages(ctx, id, persistence.MessageFilter{ActiveOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			enc := a.build.CounterFor(a.sessionModel(mustSession(t, a, id))).Name()
			for _, m := range msgs {
				if m.TokenEncoding != enc || m.TokenCount <= 0 {
					t.Fatalf("message %d stored with %d tokens of %q after the first turn, want a count of %q", m.Seq, m.TokenCount, m.TokenEncoding, enc)
				}
			}
		})
	}
}

// The context seeded by a load is dropped when another process takes a
// turn and edits a message in place between the load and the next prompt
// here: the next turn sends what the store holds.
func TestLoadSeedSeesOtherProcess(t *testing.T) {
	ctx := context.Background()
	a, b, m := twoProcs(t)
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	sess, err := b.a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sid := sess.SessionID
	for i := range 3 {
		b.prompt(t, sid, fmt.Sprint("turn ", i))
	}
	if _, err := a.a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: sid, Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	b.prompt(t, sid, "a turn in the other process")
	if err := b.a.leases.hold(ctx, b.a.sessions.get(sid), nil); err != nil {
		t.Fatal(err)
	}
	msgs, err := b.a.store.Messages(ctx, sid, persistence.MessageFilter{ActiveOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	old := msgs[1] // the first reply, in the load's read
	old.Content = "edited by the other process"
	if err := b.a.writes(b.a.sessions.get(sid)).UpdateMessage(ctx, &old); err != nil {
		t.Fatal(err)
	}
	b.a.leases.release(ctx, b.a.sessions.get(sid))

	a.prompt(t, sid, "back here")
	r := m.Requests()
	body := string(r[len(r)-1])
	for _, want := range []string{"a turn in the other process", "edited by the other process", "back here"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the first turn after the load does not send %q: %s", want, body)
		}
	}
	checkView(t, a.a, sid, "after the next turn here")
}

// A load that compacts the session (its context over the threshold of a
// smaller window) leaves the next turn the compacted view, not the read
// the load seeded.
func TestLoadSeedAfterCompactionOnLoad(t *testing.T) {
	ctx := context.Background()
	store, id, m := storedSession(t, 12)
	a := New(&recorder{}, store, newTestModel(m), Config{Model: "small", Models: []request.Model{{Name: "small", ContextWindow: 4096}}}, nil)
	t.Cleanup(a.Close)
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if list, err := store.Compactions(ctx, id); err != nil || len(list) == 0 {
		t.Fatalf("compactions %+v (%v): the load should have compacted", list, err)
	}
	if _, err := prompt(a, id, "after the compaction"); err != nil {
		t.Fatal(err)
	}
	checkView(t, a, id, "after the first turn after a compacting load")
}

// TestReplayReusedCallIDs: providers that number calls per turn (call_0,
// call_1...) reuse ids across turns. A replayed result shows the arguments
// of the call it answered (the latest before it with its id), and a call
// left without a result shows as failed even when an earlier call with its
// id has one.
func TestReplayReusedCallIDs(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	if err := store.CreateSession(ctx, &persistence.Session{ID: "reuse", Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	call := func(path string) *persistence.Message {
		return &persistence.Message{Role: persistence.RoleAssistant, Status: persistence.StatusComplete,
			ToolCalls: []persistence.ToolCall{{ID: "call_0", Name: "read_file", Arguments: `{"path":"` + path + `"}`}}}
	}
	result := func(text string) *persistence.Message {
		return &persistence.Message{Role: persistence.RoleTool, ToolCallID: "call_0", Content: text, Status: persistence.StatusComplete}
	}
	user := func(text string) *persistence.Message {
		return &persistence.Message{Role: persistence.RoleUser, Content: text, Status: persistence.StatusComplete}
	}
	if err := store.AppendMessages(ctx, "reuse",
		user("one"), call("a.go"), result("A"),
		user("two"), call("b.go"), result("B"),
		user("three"), call("c.go"), // interrupted: no result
	); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	a := New(rec, store, nil, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 100000}}}, nil)
	defer a.Close()
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: "reuse", Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	var shown []string // each tool_call: its input and status
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, u := range rec.updates {
		if u.ToolCall != nil {
			shown = append(shown, string(u.ToolCall.RawInput)+" "+string(u.ToolCall.Status))
		}
	}
	want := []string{`{"path":"a.go"} pending`, `{"path":"b.go"} pending`, `{"path":"c.go"} failed`}
	if !slices.Equal(shown, want) {
		t.Fatalf("replayed tool calls:\n %q\nwant\n %q", shown, want)
	}
}
