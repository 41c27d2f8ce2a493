package request

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Session is what building a session's model requests keeps between them,
// behind its own lock: the compaction budget, the running turn's reasoning
// items, the kept view of the context (Cache) and the facts the system
// prompt is built from. The agent keeps one per session it holds.
type Session struct {
	ID string
	// Holder is what the host keeps for the session (the agent's own
	// state of it), handed back to the host with each call; nil: none.
	Holder any

	mu sync.Mutex
	// turn is the running turn (BeginTurn; compared, never read): the
	// budget's once-a-turn rules are kept per turn.
	turn   any
	budget budget
	// items are the Responses API reasoning items of the running turn, by
	// stored message (KeepReasoningItems).
	items map[int64][]provider.ReasoningItem
	// Cache is the session's active context kept between model requests
	// (its own lock).
	Cache ContextCache
	// prompt holds the environment and instruction files the system
	// prompt is built from (its own lock).
	prompt promptFacts
}

// BeginTurn notes the turn that now runs (any comparable token of it).
func (sess *Session) BeginTurn(turn any) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.turn = turn
}

// EndTurn notes that the turn ended: its reasoning items go with it.
func (sess *Session) EndTurn() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.turn, sess.items = nil, nil
}

// Estimated is our count of the last request's tokens (Remember).
func (sess *Session) Estimated() int {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.budget.estimated
}

// Forget drops what the provider counted of the last request: the view
// changed under it (an undo, an expanded or deleted compaction).
func (sess *Session) Forget() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.budget.sent, sess.budget.reported = nil, 0
}

// MessageUpdater writes a message over its stored row.
type MessageUpdater interface {
	UpdateMessage(ctx context.Context, m *persistence.Message) error
}

// budget is a session's compaction state. It is only bookkeeping: losing it
// (a restart) costs precision, never data.
type budget struct {
	failures  int // consecutive failed automatic compactions (the breaker)
	turn      any // the turn that already compacted automatically
	sent      []int64
	estimated int // our count of the last request
	reported  int // the provider's prompt_tokens for it (0: not reported)
	// window caps the window windowTurn's requests are measured
	// against: the one its endpoint named when it refused a request
	// (recoverOverflow), remembered or not.
	window     int
	windowTurn any
}

// turnWindow is the window the running turn's requests are measured
// against after its endpoint refused one (0: none).
func (sess *Session) turnWindow() int {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if b := &sess.budget; b.windowTurn != nil && b.windowTurn == sess.turn {
		return b.window
	}
	return 0
}

// Remember notes what the next request contains, so the provider's usage
// report for it can be matched to it.
func (sess *Session) Remember(entries []ContextEntry, fixed int) {
	ids := make([]int64, 0, len(entries))
	total := fixed
	for _, e := range entries[1:] {
		ids = append(ids, e.MessageID)
		total += e.Tokens
	}
	sess.mu.Lock()
	b := &sess.budget
	b.sent, b.estimated, b.reported = ids, total, 0
	sess.mu.Unlock()
}

// ObserveUsage records the provider's prompt_tokens for the request just
// made: it is the truth about what was sent.
func (sess *Session) ObserveUsage(res *provider.Result) {
	if res == nil || res.Usage == nil || res.Usage.PromptTokens <= 0 {
		return
	}
	sess.mu.Lock()
	sess.budget.reported = res.Usage.PromptTokens
	sess.mu.Unlock()
}

// Measure returns the size of the next request: the provider's count of
// the last request when the view still starts with what was sent, plus our
// count of what is new; otherwise our count. ratio is reported/estimated of
// the last request (1 without a report), used to scale the budget the
// pipeline plans with.
func (sess *Session) Measure(entries []ContextEntry, fixed int) (used int, ratio float64) {
	est := fixed
	for _, e := range entries[1:] {
		est += e.Tokens
	}
	sess.mu.Lock()
	b := &sess.budget
	sent, estimated, reported := b.sent, b.estimated, b.reported
	sess.mu.Unlock()
	if reported == 0 || estimated == 0 {
		return est, 1
	}
	ratio = min(max(float64(reported)/float64(estimated), 0.5), 3)
	if len(entries)-1 >= len(sent) {
		prefix := true
		for i, id := range sent {
			if entries[i+1].MessageID != id {
				prefix = false
				break
			}
		}
		if prefix {
			return reported + (est - estimated), ratio
		}
	}
	return int(float64(est) * ratio), ratio
}

// UpdateMessage writes m over its stored row and tells the session's kept
// view (whether or not the write failed: it may have been applied). Every
// in-place change of a message goes through it.
func (sess *Session) UpdateMessage(ctx context.Context, store MessageUpdater, m *persistence.Message) error {
	err := store.UpdateMessage(ctx, m)
	sess.Cache.Changed(m.ID)
	return err
}

// Rewrite runs write, which changes the session's stored messages in place
// (a compaction, an expand, collapse or delete of one, a repair, a delete
// of the session), and drops the kept view whether or not it failed.
func (sess *Session) Rewrite(write func() error) error {
	defer sess.Cache.Reset()
	return write()
}

// KeepReasoningItems remembers the items of a reply for its turn.
func (sess *Session) KeepReasoningItems(messageID int64, items []provider.ReasoningItem) {
	if len(items) == 0 || messageID == 0 {
		return
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.items == nil {
		sess.items = make(map[int64][]provider.ReasoningItem)
	}
	sess.items[messageID] = items
}

// withReasoningItems attaches the turn's reasoning items to the messages of
// a
func (sess *Session) withReasoningItems(entries []ContextEntry) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if len(sess.items) == 0 {
		return
	}
	byMsg := sess.items
	for i := range entries {
		if items, ok := byMsg[entries[i].MessageID]; ok && entries[i].Msg.Role == provider.RoleAssistant {
			entries[i].Msg.ReasoningItems = items
		}
	}
}

// countedUsage is a request's usage by our count: the context we sent (as
// measured when it was built) and the reply.
func (sess *Session) countedUsage(c compaction.Counter, res *provider.Result) *provider.Usage {
	sess.mu.Lock()
	prompt := sess.budget.estimated
	sess.mu.Unlock()
	out := c.Count(res.Text) + c.Count(res.Reasoning)
	for _, tc := range res.ToolCalls {
		out += c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	return &provider.Usage{PromptTokens: prompt, CompletionTokens: out, TotalTokens: prompt + out}
}

// promptFacts is what a session's prompt is built from beyond its
// settings: the environment and the project instruction files. It is
// gathered once per session in this process (again only when the session
// directory or the tier changes), so the prompt stays a stable prefix.
type promptFacts struct {
	mu      sync.Mutex
	cwd     string
	tier    sysprompt.Tier
	ready   bool
	date    time.Time // kept across regathering: the session's start here
	env     *probe
	loader  *sysprompt.Loader
	initial []sysprompt.Instruction // root down to the session directory
	nested  []sysprompt.Instruction // folders below it, as the model touched them
}

// probe is a session's environment (sysprompt.Probe), read on a goroutine
// of its own with its own bounded context: the git status of the full tier
// takes up to sysprompt.GitTimeout, which neither the request that opened
// the session (answered already, its context ended) nor the requests
// queued behind it should wait for. The first prompt waits for it.
type probe struct {
	done chan struct{}
	env  sysprompt.Env // set before done is closed
}

// wait is the environment, once read.
func (p *probe) wait() sysprompt.Env {
	<-p.done
	return p.env
}

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
