package agent

import (
	"context"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// hangLimit is how long a call that should return at once may take before
// the test calls it hung (a hang detector, not a performance bound).
const hangLimit = time.Minute

// promptOrHang runs a prompt and fails the test if it never returns.
func promptOrHang(t *testing.T, a *Agent, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	t.Helper()
	type answer struct {
		res *acp.PromptResponse
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := a.Prompt(context.Background(), req)
		done <- answer{res, err}
	}()
	select {
	case ans := <-done:
		return ans.res, ans.err
	case <-time.After(hangLimit):
		t.Fatalf("prompt %v never answered", req.Prompt)
		return nil, nil
	}
}

// TestANSIPromptNonOpenAIModel: a prompt with a colour code, to a model
// counted by the estimator, completes and is stored with a token count
// (issue 14, case 1: the estimator never advanced on ESC and the turn hung).
func TestANSIPromptNonOpenAIModel(t *testing.T) {
	a, _, _ := newTestAgent(t, Config{Model: "qwen2.5-coder:7b"},
		fakemodel.Reply{Text: "fixed \033[32mok\033[0m\x07\x7f"})
	ctx := context.Background()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := promptOrHang(t, a, textPrompt(s.SessionID, "fix \033[31merror\x0c\x1b[0m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != acp.StopEndTurn {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	msgs, err := a.store.Messages(ctx, s.SessionID, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages stored, want prompt and reply", len(msgs))
	}
	for _, m := range msgs {
		if m.TokenCount <= 0 || m.TokenEncoding != "estimate" {
			t.Errorf("%s message counted %d (%q)", m.Role, m.TokenCount, m.TokenEncoding)
		}
	}
}
