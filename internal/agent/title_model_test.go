package agent

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// recorder is an acp.Client that keeps the session updates it is sent.
type recorder struct {
	acp.Client // nil: any other call panics, which fails the test
	mu         sync.Mutex
	updates    []acp.SessionUpdate
}

func (r *recorder) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, n.Update)
	return nil
}

func (r *recorder) titles() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.updates {
		if u.SessionInfoUpdate != nil && u.SessionInfoUpdate.Title != nil {
			out = append(out, *u.SessionInfoUpdate.Title)
		}
	}
	return out
}

// newTestStore is a real SQLite store in the test's directory.
func newTestStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "crow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newTestAgent(t *testing.T, cfg Config, replies ...fakemodel.Reply) (*Agent, *recorder, *fakemodel.Server) {
	t.Helper()
	store := newTestStore(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(replies...)
	rec := &recorder{}
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	return New(rec, store, model, cfg, nil), rec, m
}

func TestTitleFromTheModel(t *testing.T) {
	ctx := context.Background()
	a, rec, m := newTestAgent(t, Config{Model: "m", ModelTitles: true},
		fakemodel.Reply{Text: "Sure, here is the fix."},
		fakemodel.Reply{Text: "\"Fix flaky login test.\"\nextra"},
	)
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	prompt := &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("the login test fails every other run, please look")}}
	if res, err := a.Prompt(ctx, prompt); err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("prompt: %v %v", res, err)
	}
	want := []string{"the login test fails every other run, please look", "Fix flaky login test"}
	if got := rec.titles(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("titles sent: %q, want %q", got, want)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "Name this coding conversation") || !strings.Contains(string(reqs[1]), `"max_tokens":32`) {
		t.Fatalf("the second request should ask for a short title, got %d requests: %s", len(reqs), reqs[len(reqs)-1])
	}
	list, err := a.ListSessions(ctx, &acp.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Title != "Fix flaky login test" {
		t.Fatalf("session/list: %+v %v", list, err)
	}

	// The second turn keeps the title: no title request.
	m.Enqueue(fakemodel.Reply{Text: "ok"})
	prompt.Prompt = []acp.ContentBlock{acp.TextBlock("thanks")}
	if _, err := a.Prompt(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3", n)
	}
}

func TestModelTitleFailureKeepsTheLocalTitle(t *testing.T) {
	ctx := context.Background()
	a, rec, _ := newTestAgent(t, Config{Model: "m", ModelTitles: true},
		fakemodel.Reply{Text: "Done."},
		fakemodel.Reply{Status: 400}, // not retryable (a 500 would be retried)
	)
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("bump the Go version")}})
	if err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("a failed title request must not fail the turn: %v %v", res, err)
	}
	if got := rec.titles(); len(got) != 1 || got[0] != "bump the Go version" {
		t.Fatalf("titles: %q", got)
	}
}

func TestCleanModelTitle(t *testing.T) {
	for in, want := range map[string]string{
		"**Title:** Add retries\n":     "Add retries",
		"  \n`Refactor   the parser`.": "Refactor the parser",
		"“Port to Go 1.26”!":           "Port to Go 1.26",
		"":                             "",
	} {
		if got := cleanModelTitle(in); got != want {
			t.Errorf("cleanModelTitle(%q) = %q, want %q", in, got, want)
		}
	}
}
