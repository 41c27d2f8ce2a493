package compaction

import (
	"fmt"
	"strings"
)

// Settings are the knobs of compaction. Every threshold is configurable;
// Defaults gives the documented defaults. A snapshot is stored with each
// compaction record.
type Settings struct {
	// Window is the model's context window in tokens; 0 = unknown, which
	// turns automatic compaction off (there is nothing to measure against).
	Window int `json:"window"`
	// Threshold is the fraction of the input budget (Window − reserve) at
	// which automatic compaction starts.
	Threshold float64 `json:"threshold"`
	// OutputReserve is kept free for the reply; 0 = the default of a
	// quarter of the window, at most 8192 tokens.
	OutputReserve int `json:"outputReserve,omitempty"`
	// Target is the fraction of the input budget compaction aims to leave
	// in use, so the next few requests do not compact again at once.
	Target float64 `json:"target"`
	// Auto turns automatic compaction on. Off, an overflowing request is an
	// error that says so.
	Auto bool `json:"auto"`
	// KeepTurns is how many recent exchanges (user turns before the newest
	// request) summarising keeps verbatim when they fit.
	KeepTurns int `json:"keepTurns"`
	// ManualKeep is how many recent messages /compact keeps.
	ManualKeep int `json:"manualKeep"`
	// PruneProtectTurns: tool output of the last N user turns is never pruned.
	PruneProtectTurns int `json:"pruneProtectTurns"`
	// PruneProtectTokens: the newest N tokens of tool output are never pruned.
	PruneProtectTokens int `json:"pruneProtectTokens"`
	// PruneMinimum: prune only when at least N tokens can be reclaimed.
	PruneMinimum int `json:"pruneMinimum"`
	// ProtectedTools are tool names whose output is never pruned.
	ProtectedTools []string `json:"protectedTools,omitempty"`
	// StallRatio: a compaction that saves less than this fraction of the
	// tokens is not applied, and compaction stops and says so.
	StallRatio float64 `json:"stallRatio"`
	// MaxFailures: after this many consecutive failed compactions automatic
	// compaction stops for the session (a circuit breaker).
	MaxFailures int `json:"maxFailures"`
}

// Defaults are the documented defaults.
func Defaults() Settings {
	return Settings{
		Threshold:          0.9,
		Target:             0.6,
		Auto:               true,
		KeepTurns:          6,
		ManualKeep:         10,
		PruneProtectTurns:  2,
		PruneProtectTokens: 40000,
		PruneMinimum:       20000,
		StallRatio:         0.05,
		MaxFailures:        3,
	}
}

// MaxDefaultReserve caps the default output reserve.
const MaxDefaultReserve = 8192

// Reserve is the tail kept free for the model's reply.
func (s Settings) Reserve() int {
	if s.OutputReserve > 0 {
		return s.OutputReserve
	}
	return min(s.Window/4, MaxDefaultReserve)
}

// Budget is what a request may use for its input: Window − Reserve. A
// request over it does not fit. 0 when the window is unknown.
func (s Settings) Budget() int {
	if s.Window <= 0 {
		return 0
	}
	return max(s.Window-s.Reserve(), 0)
}

// Trigger is the input size at which automatic compaction starts.
func (s Settings) Trigger() int {
	return int(s.Threshold * float64(s.Budget()))
}

// TargetTokens is the input size compaction aims for.
func (s Settings) TargetTokens() int {
	return int(s.Target * float64(s.Budget()))
}

// Validate reports settings that cannot work, naming the setting.
func (s Settings) Validate() error {
	var errs []string
	if s.Window < 0 {
		errs = append(errs, fmt.Sprintf("context window %d is negative", s.Window))
	}
	if s.Threshold <= 0 || s.Threshold > 1 {
		errs = append(errs, fmt.Sprintf("compact threshold %g is not in (0, 1]", s.Threshold))
	}
	if s.Target <= 0 || s.Target > s.Threshold {
		errs = append(errs, fmt.Sprintf("compact target %g is not in (0, threshold %g]", s.Target, s.Threshold))
	}
	if s.OutputReserve < 0 || (s.Window > 0 && s.Reserve() >= s.Window) {
		errs = append(errs, fmt.Sprintf("output reserve %d leaves nothing of the %d-token window", s.Reserve(), s.Window))
	}
	if s.KeepTurns < 0 || s.ManualKeep < 0 || s.PruneProtectTurns < 0 || s.PruneProtectTokens < 0 || s.PruneMinimum < 0 {
		errs = append(errs, "keep and prune counts must not be negative")
	}
	if s.StallRatio < 0 || s.StallRatio >= 1 {
		errs = append(errs, fmt.Sprintf("stall ratio %g is not in [0, 1)", s.StallRatio))
	}
	if s.MaxFailures < 1 {
		errs = append(errs, fmt.Sprintf("max failures %d must be at least 1", s.MaxFailures))
	}
	if len(errs) > 0 {
		return fmt.Errorf("compaction settings: %s", strings.Join(errs, "; "))
	}
	return nil
}

// DefaultWindow returns the context window of well-known models, 0 when the
// model is not known. CROW_CONTEXT_WINDOW overrides it; the table never
// guesses for a model it does not list.
func DefaultWindow(model string) int {
	for _, w := range knownWindows {
		if model == w.prefix || strings.HasPrefix(model, w.prefix+"-") {
			return w.window
		}
	}
	return 0
}

// knownWindows lists models by name and dated variants (name-YYYY-MM-DD),
// most specific first.
var knownWindows = []struct {
	prefix string
	window int
}{
	{"gpt-4o-mini", 128000},
	{"gpt-4o", 128000},
	{"gpt-4.1-mini", 1047576},
	{"gpt-4.1-nano", 1047576},
	{"gpt-4.1", 1047576},
	{"gpt-4-turbo", 128000},
	{"gpt-4", 8192},
	{"gpt-3.5-turbo", 16385},
	{"gpt-5-mini", 400000},
	{"gpt-5-nano", 400000},
	{"gpt-5", 400000},
	{"o1-mini", 128000},
	{"o1", 200000},
	{"o3-mini", 200000},
	{"o3", 200000},
	{"o4-mini", 200000},
}
