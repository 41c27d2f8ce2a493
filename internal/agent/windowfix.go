package agent

import (
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/internal/agent/request"
)

// windowFix says how to make room when a request cannot fit m's window:
// fixed is the system prompt and tool schemas, used the whole request. A
// window the server told (discovered, or learned from a refusal) is the
// server's own: raising CROW_CONTEXT_WINDOW past it only earns its
// refusal, so the fix is the server's context or fewer tokens sent.
func (a *Agent) windowFix(m meter, fixed, used int) string {
	tools := ""
	if !a.cfg.NoTools {
		tools = `, or turn the tools off (CROW_TOOLS=off, or tools = "off" in the configuration file) so that their schemas are not sent`
	}
	src := m.model.WindowSource
	switch {
	case serverTold(src):
		return fmt.Sprintf("the %d-token window is the server's own (%s), so raising CROW_CONTEXT_WINDOW would only earn its refusal: %s, then run crow-acp config forget-window and start the agent again%s",
			m.st.Window, src, serverContextHint(src, suggestedWindow(fixed, used+m.st.Reserve())), tools)
	case src == request.WindowConfigured:
		return "raise the configured window (CROW_CONTEXT_WINDOW, or context_window in [[models]]) if the model's server takes more, or lower CROW_OUTPUT_RESERVE" + tools
	default:
		return "set the model's real window (CROW_CONTEXT_WINDOW, or context_window in [[models]]), or lower CROW_OUTPUT_RESERVE" + tools
	}
}

// serverTold reports whether a window source is what the endpoint said.
func serverTold(source string) bool {
	return strings.HasPrefix(source, "discovered") || strings.HasPrefix(source, request.LearnedPrefix)
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
