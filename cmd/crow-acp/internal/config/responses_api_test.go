package config

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// thoughtSink records the thoughts and the text streamed to the client.
type thoughtSink struct {
	acp.Client
	mu              sync.Mutex
	thoughts, texts strings.Builder
}

func (s *thoughtSink) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := n.Update.AgentThoughtChunk; c != nil && c.Content.Text != nil {
		s.thoughts.WriteString(c.Content.Text.Text)
	}
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		s.texts.WriteString(c.Content.Text.Text)
	}
	return nil
}

// TestResponsesAPIProvider: a provider with api = "responses" is spoken to
// with OpenAI's Responses API: the reasoning summary streams as thoughts,
// the reasoning item goes back with the turn's function calls (the fake
// refuses the request otherwise, as OpenAI does), and /compact and the next
// turns work as with chat completions.
func TestResponsesAPIProvider(t *testing.T) {
	m := fakemodel.Start()
	defer m.Close()
	dir := t.TempDir()
	for name, text := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	doc := `model = "o4-mini"

[providers.openai]
base_url = "` + m.URL() + `"
api = "responses"

[[models]]
name = "o4-mini"
context_window = 200000
`
	cfg, _, err := loadTestConfigIn(t, dir, doc, map[string]string{"OPENAI_API_KEY": "sk-test", "CROW_COMPACT_KEEP_RECENT": "2"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "crow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sink := &thoughtSink{}
	a := agent.New(sink, store, cfg.ModelClient(), cfg.Agent("test"), nil)
	defer a.Close()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	m.Enqueue(
		fakemodel.Reply{Reasoning: "Read both files, then compare.", ToolCalls: []fakemodel.ToolCall{
			{ID: "call_a", Name: "read_file", Arguments: `{"path":"a.txt"}`},
			{ID: "call_b", Name: "read_file", Arguments: `{"path":"b.txt"}`}}},
		fakemodel.Reply{Text: "a.txt says alpha; b.txt says beta."},
		fakemodel.Reply{Text: "Nothing else."},
		fakemodel.Reply{Text: "## Task\nCompare the files.\n## Next steps\nnone"},
		fakemodel.Reply{Text: "Still alpha and beta."},
	)
	ask := func(text string) {
		t.Helper()
		res, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		if err != nil || res.StopReason != acp.StopEndTurn {
			t.Fatalf("%q: %v %v", text, res, err)
		}
	}
	ask("Read a.txt and b.txt")
	ask("Anything else?")
	ask("/compact")
	ask("Still there?")
	if sink.thoughts.String() != "Read both files, then compare." {
		t.Fatalf("thoughts %q", sink.thoughts.String())
	}
	if !strings.Contains(sink.texts.String(), "Still alpha and beta.") {
		t.Fatalf("texts %q", sink.texts.String())
	}
	reqs := m.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	second := string(reqs[1])
	if !strings.Contains(second, `"encrypted_content":"enc_1"`) || !strings.Contains(second, `"type":"function_call_output"`) {
		t.Fatalf("the second request lacks the reasoning item or the outputs: %s", second)
	}
	if strings.Contains(string(reqs[2]), "enc_1") {
		t.Fatal("a reasoning item outlived its turn")
	}
	if list, err := store.Compactions(ctx, s.SessionID); err != nil || len(list) != 1 {
		t.Fatalf("compactions: %v %v", list, err)
	}
}

// TestProviderAPIValidated: an unknown api is refused with its line.
func TestProviderAPIValidated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(file, []byte("[providers.x]\napi = \"grpc\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cf := AddFlags(fs, FlagsAll)
	if err := fs.Parse([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	_, err := Load(cf, func(k string) string { return map[string]string{"HOME": dir}[k] })
	if err == nil || !strings.Contains(err.Error(), "c.toml:2: providers.x.api") {
		t.Fatalf("got %v", err)
	}
}
