package agent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// tokenCacheCounter counts writes that cache token counts.
type tokenCacheCounter struct {
	persistence.Store
	n *atomic.Int32 // shared by the fenced views of the store
}

// WithFence counts the writes of the fenced view a turn writes through.
func (c *tokenCacheCounter) WithFence(f persistence.Fence) persistence.Store {
	return &tokenCacheCounter{Store: c.Store.WithFence(f), n: c.n}
}

func (c *tokenCacheCounter) SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error {
	c.n.Add(1)
	return c.Store.SetTokenCounts(ctx, sessionID, encoding, counts)
}

// Messages are stored with their token counts, so building the next
// request's context counts nothing and writes nothing.
func TestMessagesStoredWithTokenCounts(t *testing.T) {
	ctx := context.Background()
	real := newTestStore(t)
	store := &tokenCacheCounter{Store: real, n: new(atomic.Int32)}
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "a reply in several words", Chunks: 4})
	a := New(&recorder{}, store, provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL()}), Config{Model: "gpt-4o"}, nil)
	t.Cleanup(a.Close)
	sess, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"first", "second"} {
		if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: sess.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.n.Load(); n != 0 {
		t.Errorf("%d writes cached token counts; the messages should have been stored with theirs", n)
	}
	msgs, err := real.Messages(ctx, sess.SessionID, persistence.MessageFilter{})
	if err != nil || len(msgs) != 4 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	c, _ := compaction.NewCounter("gpt-4o", "")
	for _, msg := range msgs {
		if want := compaction.MessageTokens(c, &msg); msg.TokenCount != want || msg.TokenEncoding != c.Name() {
			t.Errorf("%s %q: stored %d tokens (%s), want %d (%s)", msg.Role, msg.Content, msg.TokenCount, msg.TokenEncoding, want, c.Name())
		}
	}
}

// A prompt of one text block is stored as its text alone and replays as the
// same block; a prompt of several blocks keeps them all.
func TestPlainPromptStoredOnce(t *testing.T) {
	one := []persistence.Part{{Type: "text", Text: "fix the test"}}
	if got := storedParts(one); got != nil {
		t.Errorf("one text block stored as parts %+v", got)
	}
	m := persistence.Message{Role: persistence.RoleUser, Content: modelText(one), Parts: storedParts(one)}
	withParts := persistence.Message{Role: persistence.RoleUser, Content: modelText(one), Parts: one}
	if a, b := appendReplayUpdates(nil, m), appendReplayUpdates(nil, withParts); len(a) != 1 || len(b) != 1 ||
		a[0].UserMessageChunk.Content.Text.Text != b[0].UserMessageChunk.Content.Text.Text {
		t.Errorf("replay differs: %+v vs %+v", a, b)
	}
	several := []persistence.Part{{Type: "text", Text: "see"}, {Type: "resource_link", URI: "file:///a.go", Name: "a.go"}}
	if got := storedParts(several); len(got) != 2 {
		t.Errorf("several blocks stored as %+v", got)
	}
}
