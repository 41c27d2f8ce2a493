package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func TestScaledLimits(t *testing.T) {
	for _, tc := range []struct{ window, output, calls int }{
		{0, 8 << 10, 50}, {8192, 8 << 10, 50}, {32768, 8 << 10, 50},
		{65536, 16 << 10, 100}, {100000, 16 << 10, 100},
		{128000, 32 << 10, 200}, {131072, 32 << 10, 200}, {200000, 32 << 10, 200},
	} {
		if o, c := request.ScaledLimits(tc.window); o != tc.output || c != tc.calls {
			t.Errorf("window %d: %d bytes, %d requests; want %d, %d", tc.window, o, c, tc.output, tc.calls)
		}
	}
	a := agentWithModels(Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 200000}}})
	s := &persistence.Session{}
	// limits are the session's limits as a turn takes them.
	limits := func() (output, calls int) {
		m := a.sessionModel(s)
		return request.ToolOutputLimit(a.cfg.ToolOutputLimit, m), request.MaxModelCalls(a.cfg.MaxModelCalls, m)
	}
	if o, c := limits(); o != 32<<10 || c != 200 {
		t.Errorf("200k window: %d bytes, %d requests", o, c)
	}
	a.cfg.ToolOutputLimit, a.cfg.MaxModelCalls = 4096, 7 // configured: kept as is
	if o, c := limits(); o != 4096 || c != 7 {
		t.Errorf("configured limits were scaled: %d bytes, %d requests", o, c)
	}
	a = agentWithModels(Config{Model: "unknown", Models: []request.Model{{Name: "unknown", ContextWindow: 128000, WindowAssumed: true}}})
	if o, c := limits(); o != request.DefaultToolOutputLimit || c != request.DefaultMaxModelCalls {
		t.Errorf("an assumed window scaled the limits: %d bytes, %d requests", o, c)
	}
}

// TestToolResultLimitFollowsTheWindow: a 20 KB file reaches a model with a
// 200k window whole, and one with an 8k window cut to 8 KiB.
func TestToolResultLimitFollowsTheWindow(t *testing.T) {
	line := strings.Repeat("x", 199) + "\n"
	for _, tc := range []struct {
		window int
		cut    bool
	}{{200000, false}, {8192, true}} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat(line, 100)), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		a, _, m := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: tc.window}}},
			fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"big.txt"}`}}},
			fakemodel.Reply{Text: "ok"})
		s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("read big.txt")}}); err != nil {
			t.Fatal(err)
		}
		reqs := m.Requests()
		var body struct {
			Messages []struct {
				Role, Content string
			}
		}
		if len(reqs) != 2 || json.Unmarshal(reqs[1], &body) != nil {
			t.Fatalf("window %d: %d requests", tc.window, len(reqs))
		}
		result := body.Messages[len(body.Messages)-1].Content
		if got := len(result) < 10<<10; got != tc.cut {
			t.Errorf("window %d: the model got %d bytes of a 20,000-byte file (cut: %v, want %v)", tc.window, len(result), got, tc.cut)
		}
	}
}

// agentWithModels is an agent of cfg with nothing but its models: enough
// for the limits, which only read the session's model.
func agentWithModels(cfg Config) *core {
	return &core{cfg: cfg, models: request.NewModels(cfg.Models, cfg.Model, nil, nil, nil, zap.NewNop())}
}
