package compaction

import (
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// One entry of the summariser's transcript takes at most half its room:
// the room is measured with a calibration learned on other text, and a
// long prompt that filled all of it sent a summary request over a 2k
// window by the provider's count (agent TestBreakerAfterThreeFailures).
func TestTranscriptEntryTakesHalfTheRoom(t *testing.T) {
	c := Estimator{}
	long := strings.Repeat("the parser returns an error when the input is empty ", 400)
	msgs := []persistence.Message{{Role: persistence.RoleUser, Content: long}}
	for _, budget := range []int{400, 1200, 2000} {
		got := renderTranscript(c, msgs, budget)
		if n := c.Count(got); n > budget/2+20 {
			t.Errorf("budget %d: the one entry takes %d tokens", budget, n)
		}
	}
	// Large rooms keep the per-entry cap.
	if n := c.Count(renderTranscript(c, msgs, 100000)); n > transcriptMessageTokens+20 {
		t.Errorf("room 100000: %d tokens", n)
	}
}
