package request

import (
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/internal/compaction"
)

// Meter is what one session's requests are measured with: the session's
// model, its tokenizer, and the compaction settings with its window.
type Meter struct {
	Model    Model
	Counter  compaction.Counter
	Settings compaction.Settings
}

// Within is m measured against a window of at most tokens (0: m), with
// its reply reserve cut as for a learned window (WithLearnedWindow).
func (m Meter) Within(tokens int) Meter {
	if tokens <= 0 || m.Settings.Window > 0 && m.Settings.Window <= tokens {
		return m
	}
	m.Settings.Window, m.Settings.OutputReserve = tokens, m.Model.OutputReserve
	if m.Settings.OutputReserve >= tokens/2 {
		m.Settings.OutputReserve = min(DefaultOutputReserve, tokens/4)
	}
	return m
}

// FitsWindow reports whether a request of used tokens fits st's window
// itself, leaving a quarter of the reply reserve for the reply: the
// endpoint takes it, though the reply may be cut short.
func FitsWindow(st compaction.Settings, used int) bool {
	return st.Window > 0 && used+st.Reserve()/4 <= st.Window
}

// WindowFix says how to make room when a request cannot fit m's window
// (noTools: the tools are off already): fixed is the system prompt and
// tool schemas, used the whole request. A
// window the server told (discovered, or learned from a refusal) is the
// server's own: raising CROW_CONTEXT_WINDOW past it only earns its
// refusal, so the fix is the server's context or fewer tokens sent.
func (m Meter) WindowFix(noTools bool, fixed, used int) string {
	tools := ""
	if !noTools {
		tools = `, or turn the tools off (CROW_TOOLS=off, or tools = "off" in the configuration file) so that their schemas are not sent`
	}
	src := m.Model.WindowSource
	switch {
	case serverTold(src):
		return fmt.Sprintf("the %d-token window is the server's own (%s), so raising CROW_CONTEXT_WINDOW would only earn its refusal: %s, then run crow-acp config forget-window and start the agent again%s",
			m.Settings.Window, src, serverContextHint(src, suggestedWindow(fixed, used+m.Settings.Reserve())), tools)
	case src == WindowConfigured:
		return "raise the configured window (CROW_CONTEXT_WINDOW, or context_window in [[models]]) if the model's server takes more, or lower CROW_OUTPUT_RESERVE" + tools
	default:
		return "set the model's real window (CROW_CONTEXT_WINDOW, or context_window in [[models]]), or lower CROW_OUTPUT_RESERVE" + tools
	}
}

// serverTold reports whether a window source is what the endpoint said.
func serverTold(source string) bool {
	return strings.HasPrefix(source, "discovered") || strings.HasPrefix(source, LearnedPrefix)
}

// suggestedWindow is a context size to ask the server for: a power of two
// where the fixed part takes at most a quarter and need fits.
func suggestedWindow(fixed, need int) int {
	n := 8192
	for n < 4*fixed || n < need {
		n *= 2
	}
	return n
}

// serverContextHint names how the server that told source is given a
// larger context of n tokens.
func serverContextHint(source string, n int) string {
	switch {
	case strings.Contains(source, "llama.cpp"):
		return fmt.Sprintf("restart llama-server with a larger context (-c %d or more)", n)
	case strings.Contains(source, "Ollama") || strings.Contains(source, "truncation"):
		return fmt.Sprintf("give the model a larger context in Ollama (num_ctx %d in its Modelfile, or OLLAMA_CONTEXT_LENGTH=%d for the server)", n, n)
	case strings.Contains(source, "LM Studio"):
		return fmt.Sprintf("load the model in LM Studio with a larger context length (%d or more)", n)
	case strings.Contains(source, "max_model_len"):
		return fmt.Sprintf("restart the server with a larger context (vLLM: --max-model-len %d)", n)
	default:
		return fmt.Sprintf("restart the model server with a larger context (%d tokens or more)", n)
	}
}

// Per-turn limits scale with the model's context window: today's values
// were sized for small windows (an 8 KiB result is ~2,000 tokens, a quarter
// of an 8k window), and at 200k they cut results a model could easily
// hold and stop long tasks early. Small or unknown windows keep them.
const (
	scaledWindowMedium = 64 << 10  // tokens (64k)
	scaledWindowLarge  = 128 << 10 // tokens (128k)
)

// ScaledLimits returns the tool-result limit (bytes) and the model
// requests per turn for a context window of window tokens (0: unknown).
func ScaledLimits(window int) (outputLimit, modelCalls int) {
	switch {
	case window >= scaledWindowLarge-(8<<10): // 120k and up: the "128k" models
		return 32 << 10, 200
	case window >= scaledWindowMedium-(4<<10): // 60k and up: the "64k" models
		return 16 << 10, 100
	}
	return DefaultToolOutputLimit, DefaultMaxModelCalls
}

// DefaultToolOutputLimit keeps one tool result near 2,000 tokens, which
// leaves room in small (8k) context windows.
const DefaultToolOutputLimit = 8 << 10

// DefaultMaxModelCalls is the default cap on model requests per turn.
const DefaultMaxModelCalls = 50

// limitsWindow is m's window for the limits, 0 when it is only assumed.
func limitsWindow(m Model) int {
	if m.WindowAssumed {
		return 0
	}
	return m.ContextWindow
}

// ToolOutputLimit is how much of one tool result the model m sees:
// configured (when over 0), else scaled to m's window.
func ToolOutputLimit(configured int, m Model) int {
	if configured > 0 {
		return configured
	}
	n, _ := ScaledLimits(limitsWindow(m))
	return n
}

// MaxModelCalls caps the model requests of one turn with model m:
// configured (when over 0), else scaled to m's window.
func MaxModelCalls(configured int, m Model) int {
	if configured > 0 {
		return configured
	}
	_, n := ScaledLimits(limitsWindow(m))
	return n
}
