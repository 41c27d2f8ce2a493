package chat

import (
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// TestStatusLine: the status line follows usage_update (the cost only when
// the agent sends one), mode and model changes, drops its least important
// parts when the terminal is narrow, and shows the agent's names safely.
func TestStatusLine(t *testing.T) {
	s := Status{Model: "qwen3\x1b[2J"}
	s.fromModes(&acp.SessionModeState{CurrentModeID: "default"})
	if got, want := s.Line(80), "qwen3^[[2J · default"; got != want {
		t.Errorf("before usage: %q, want %q", got, want)
	}
	s.Observe(acp.SessionUpdate{UsageUpdate: &acp.UsageUpdate{Used: 12345, Size: 131072}})
	if got, want := s.Line(80), "qwen3^[[2J · default · 12.3k/131k tokens (9%)"; got != want {
		t.Errorf("after usage: %q, want %q", got, want)
	}
	s.Observe(acp.SessionUpdate{UsageUpdate: &acp.UsageUpdate{Used: 900, Size: 8192, Cost: &acp.Cost{Amount: 0.01234, Currency: "USD"}}})
	s.Observe(acp.SessionUpdate{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: "plan"}})
	s.Observe(acp.SessionUpdate{ConfigOptionUpdate: &acp.ConfigOptionUpdate{ConfigOptions: []acp.SessionConfigOption{{Category: "model", CurrentValue: "glm-4.6"}}}})
	for width, want := range map[int]string{
		80: "glm-4.6 · plan · 900/8.2k tokens (10%) · $0.0123",
		40: "glm-4.6 · plan · 900/8.2k tokens (10%)",
		16: "glm-4.6 · plan",
		3:  "",
	} {
		if got := s.Line(width); got != want {
			t.Errorf("width %d: %q, want %q", width, got, want)
		}
	}
}
