package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// panickyClient panics on the first reply chunk it is sent: a bug in the
// turn's own goroutine, which no connection-level recover reaches.
type panickyClient struct {
	recorder
	once sync.Once
}

func (c *panickyClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	if n.Update.AgentMessageChunk != nil {
		fire := false
		c.once.Do(func() { fire = true })
		if fire {
			var s []int
			_ = s[len(s)-1] // index out of range [-1], as in issue 29
		}
	}
	return c.recorder.SessionUpdate(ctx, n)
}

// TestPanicInTurnIsAnInternalError: a panic inside a prompt turn answers
// that prompt with -32603, logs the stack, releases the session, and the
// next prompt on it runs.
func TestPanicInTurnIsAnInternalError(t *testing.T) {
	ctx := context.Background()
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "hello"})
	core, logs := observer.New(zap.ErrorLevel)
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	a := New(&panickyClient{}, newTestStore(t), model, Config{Model: "m"}, zap.New(core))
	t.Cleanup(a.Close)
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = prompt(a, s.SessionID, "first")
	var e *acp.Error
	if !errors.As(err, &e) || e.Code != acp.CodeInternalError || !strings.Contains(e.Message, "internal error in the prompt turn") {
		t.Fatalf("a turn that panics answered %v; want -32603 naming the prompt turn", err)
	}
	if len(logs.All()) != 1 || !strings.Contains(logs.All()[0].ContextMap()["stack"].(string), "panickyClient") {
		t.Fatalf("log lines %v; want one with the stack", logs.All())
	}
	if res, err := prompt(a, s.SessionID, "second"); err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("the next prompt after a panic: %v %v", res, err)
	}
}
