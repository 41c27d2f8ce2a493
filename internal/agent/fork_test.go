package agent

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
	"github.com/crow-acp/crow-acp/internal/secret"
)

// A fork keeps the source's settings (model, mode, system prompt, loaded
// instruction files) and takes the roots and MCP servers its request names
// (their secrets masked as for session/new); its cost starts at nothing.
// The source is left as it was, and the fork's next request carries the
// source's history and system prompt.
func TestForkCopiesSettings(t *testing.T) {
	ctx := context.Background()
	a, _, m := newTestAgent(t, Config{Model: "m"}, fakemodel.Reply{Text: "Hello there."}, fakemodel.Reply{Text: "Forked reply."})
	src, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir(), AdditionalDirectories: []string{"/src/extra"},
		SystemPrompt: &acp.SystemPrompt{Mode: acp.SystemPromptOverride, Content: []acp.ContentBlock{acp.TextBlock("Be terse, FORKTEST.")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: src.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.updateMeta(ctx, a.sessions.get(src.SessionID), func(_ *persistence.Session, m *sessionMeta) {
		m.Mode, m.Cost, m.Instructions = ModePlan, map[string]float64{"USD": 1.5}, []string{"pkg/AGENTS.md"}
	}); err != nil {
		t.Fatal(err)
	}
	before, _ := a.store.GetSession(ctx, src.SessionID)

	cwd := t.TempDir()
	res, err := a.ForkSession(ctx, &acp.ForkSessionRequest{SessionID: src.SessionID, Cwd: cwd, AdditionalDirectories: []string{"/fork/extra"},
		McpServers: []acp.McpServer{{Name: "tools", Command: "/nonexistent/mcp", Env: []acp.EnvVariable{{Name: "TOKEN", Value: "tok-123"}}}}})
	if err != nil {
		t.Fatalf("ForkSession: %v", err)
	}
	if res.SessionID == src.SessionID || res.Modes == nil || res.Modes.CurrentModeID != ModePlan {
		t.Fatalf("fork response %+v", res)
	}
	fork, err := a.store.GetSession(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	fm, sm := decodeMeta(fork.Metadata), decodeMeta(before.Metadata)
	if fork.Cwd != cwd || fork.Title != before.Title {
		t.Errorf("fork cwd %q title %q, want %q and the source's %q", fork.Cwd, fork.Title, cwd, before.Title)
	}
	if fm.Model != sm.Model || fm.Mode != ModePlan || !reflect.DeepEqual(fm.SystemPrompt, sm.SystemPrompt) || !reflect.DeepEqual(fm.Instructions, sm.Instructions) {
		t.Errorf("fork settings %+v, want the source's %+v", fm, sm)
	}
	if fm.Cost != nil || !reflect.DeepEqual(fm.AdditionalDirectories, []string{"/fork/extra"}) {
		t.Errorf("fork cost %v dirs %v, want none and the request's", fm.Cost, fm.AdditionalDirectories)
	}
	if len(fm.McpServers) != 1 || fm.McpServers[0].Env[0].Value != secret.Mask {
		t.Errorf("fork MCP servers stored as %+v, want the secret masked", fm.McpServers)
	}
	if from, _, ok := ForkedFrom(fork); !ok || from != src.SessionID {
		t.Errorf("ForkedFrom = %q %v, want %q", from, ok, src.SessionID)
	}
	if _, _, ok := ForkedFrom(before); ok {
		t.Error("the source claims to be a fork")
	}
	if after, _ := a.store.GetSession(ctx, src.SessionID); string(after.Metadata) != string(before.Metadata) {
		t.Errorf("forking changed the source's metadata:\n%s\n%s", before.Metadata, after.Metadata)
	}

	if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: res.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("and now?")}}); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	last := string(reqs[len(reqs)-1])
	for _, want := range []string{"Be terse, FORKTEST.", `"hi"`, "Hello there.", "and now?"} {
		if !strings.Contains(last, want) {
			t.Errorf("the fork's request lacks %s: %s", want, last)
		}
	}
	srcMsgs, _ := a.store.Messages(ctx, src.SessionID, persistence.MessageFilter{})
	if len(srcMsgs) != 2 {
		t.Errorf("the source has %d messages after the fork's turn, want its own 2", len(srcMsgs))
	}
}

// A turn of another live process holds the source: the fork is refused
// with that process named, and nothing is created.
func TestForkRefusedWhileAnotherProcessRuns(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newTestAgent(t, Config{Model: "m"})
	src, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	other := &persistence.Lease{SessionID: src.SessionID, Owner: "conn_other", PID: os.Getpid(), Host: host}
	if err := a.store.AcquireLease(ctx, other, time.Minute, ""); err != nil {
		t.Fatal(err)
	}
	_, err = a.ForkSession(ctx, &acp.ForkSessionRequest{SessionID: src.SessionID, Cwd: t.TempDir()})
	var e *acp.Error
	if !errors.As(err, &e) || e.Code != acp.CodeInvalidRequest || !strings.Contains(e.Message, "another crow-acp process") {
		t.Fatalf("fork while another process's turn runs: %v, want -32600 naming it", err)
	}
	list, _, err := a.store.ListSessions(ctx, persistence.ListSessionsOptions{})
	if err != nil || len(list) != 1 {
		t.Errorf("%d sessions after a refused fork (%v), want 1", len(list), err)
	}
}
