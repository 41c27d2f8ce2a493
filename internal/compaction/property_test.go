package compaction

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// history generates random sessions: turns of a user request, tool-calling
// iterations (some results missing, as after a crash, some failed), a final
// answer; sometimes an earlier summary first; the last turn sometimes still
// in the middle of its tool calls.
type history struct {
	r      *rand.Rand
	c      Counter
	nextID int64
	seq    int64
	msgs   []persistence.Message
}

var words = strings.Fields("the parser fails on empty input fix it and add a test read main.go " +
	"函数 错误 テスト 파일 {\"path\":\"a.go\"} func() error return nil if err != nil")

func (h *history) text(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[h.r.IntN(len(words))])
	}
	return b.String()
}

func (h *history) add(m persistence.Message) {
	h.nextID++
	h.seq++
	m.ID, m.Seq, m.IsActive = h.nextID, h.seq, true
	if m.Status == "" {
		m.Status = persistence.StatusComplete
	}
	m.TokenCount = MessageTokens(h.c, &m)
	h.msgs = append(h.msgs, m)
}

var toolNames = []string{"read_file", "write_file", "run_command", "update_plan", "grep"}

func randomHistory(r *rand.Rand, c Counter) []persistence.Message {
	h := &history{r: r, c: c}
	if r.IntN(5) == 0 {
		pin := &Pinned{Task: "the original task", LatestRequest: "x", FilesRead: []string{"old.go"}}
		h.add(persistence.Message{Role: persistence.RoleSummary, Content: "earlier summary\n\n" + pin.Render(),
			Meta: metaJSON(PolicySummarize, pin, 0)})
	}
	turns := 1 + r.IntN(8)
	for t := 0; t < turns; t++ {
		last := t == turns-1
		h.add(persistence.Message{Role: persistence.RoleUser, Content: h.text(1 + r.IntN(30))})
		if r.IntN(10) == 0 {
			continue // cancelled before any reply
		}
		iters := r.IntN(4)
		for it := 0; it < iters; it++ {
			var calls []persistence.ToolCall
			for k := 0; k < 1+r.IntN(3); k++ {
				name := toolNames[r.IntN(len(toolNames))]
				args := fmt.Sprintf(`{"path":"f%d.go"}`, r.IntN(20))
				if name == "update_plan" {
					args = `{"entries":[{"content":"step one","status":"completed"},{"content":"step two","status":"pending"}]}`
				}
				calls = append(calls, persistence.ToolCall{ID: fmt.Sprintf("call_%d_%d_%d", t, it, k), Name: name, Arguments: args})
			}
			h.add(persistence.Message{Role: persistence.RoleAssistant, Content: h.text(r.IntN(5)), ToolCalls: calls})
			for _, tc := range calls {
				if r.IntN(12) == 0 {
					continue // interrupted: no result stored
				}
				st := persistence.StatusComplete
				if r.IntN(8) == 0 {
					st = persistence.StatusFailed
				}
				h.add(persistence.Message{Role: persistence.RoleTool, ToolCallID: tc.ID, Status: st,
					Content: h.text(r.IntN(200))})
			}
		}
		if last && iters > 0 && r.IntN(2) == 0 {
			continue // mid-turn: tool calls pending an answer
		}
		h.add(persistence.Message{Role: persistence.RoleAssistant, Content: h.text(1 + r.IntN(40))})
	}
	return h.msgs
}

// applyInMemory is the store's ApplyCompaction on a slice.
func applyInMemory(view []persistence.Message, p *Plan, nextID *int64) []persistence.Message {
	gone := make(map[int64]bool)
	for _, id := range p.Compacted {
		gone[id] = true
	}
	var out []persistence.Message
	var seq int64
	for _, m := range view {
		seq = max(seq, m.Seq)
		if !gone[m.ID] {
			out = append(out, m)
		}
	}
	for _, a := range p.Added {
		*nextID++
		seq++
		m := *a
		m.ID, m.Seq, m.IsActive = *nextID, seq, true
		out = append(out, m)
	}
	return out
}

func checkAfter(t *testing.T, before, after []persistence.Message, what string) {
	t.Helper()
	ordered := Order(after)
	if err := CheckSequence(ordered); err != nil {
		t.Fatalf("%s: context not valid for the API: %v", what, err)
	}
	_, rest := split(before)
	if i := newestUser(rest); i >= 0 {
		found := false
		for _, m := range ordered {
			if m.ID == rest[i].ID {
				found = reflect.DeepEqual(m, rest[i])
			}
		}
		if !found {
			t.Fatalf("%s: newest user message missing or changed", what)
		}
		// Everything of the newest turn (pending calls and results) stays.
		for _, m := range rest[i:] {
			ok := false
			for _, a := range after {
				if a.ID == m.ID {
					ok = true
				}
			}
			if !ok && m.Role != persistence.RoleTool {
				t.Fatalf("%s: message %d of the current turn was compacted", what, m.ID)
			}
		}
	}
}

const propertyRuns = 10000

// TestPropertyEveryCut builds a summary at every turn boundary of 10,000
// random histories and checks every invariant; cuts inside a turn must be
// refused by the checker.
func TestPropertyEveryCut(t *testing.T) {
	c := Estimator{}
	r := rand.New(rand.NewPCG(4, 2))
	legal, illegal := 0, 0
	for run := 0; run < propertyRuns; run++ {
		view := randomHistory(r, c)
		summaries, rest := split(view)
		newest := newestOf(view)
		boundaries := map[int]bool{}
		for _, tr := range Turns(rest) {
			boundaries[tr.Start] = true
		}
		last := newestUser(rest)
		for at := 0; at <= len(rest); at++ {
			k := cut{summaries: summaries, rest: rest, at: at}
			if len(k.compacted()) == 0 {
				continue
			}
			if !boundaries[at] && at != 0 && r.IntN(8) != 0 {
				continue // every legal cut; a sample of the illegal ones
			}
			pinned := collectPinned(c, 400, summaries, rest[:at], newest)
			p := summaryPlan(c, 100, view, k, PolicySummarize, "## Task\nsummary", pinned)
			err := CheckPlan(c, view, p)
			isLegal := (boundaries[at] || at == 0) && (last < 0 || at <= last)
			if isLegal {
				legal++
				if err != nil {
					t.Fatalf("run %d, cut %d: legal cut refused: %v", run, at, err)
				}
				var next int64 = 1 << 40
				checkAfter(t, view, applyInMemory(view, p, &next), fmt.Sprintf("run %d cut %d", run, at))
				if pin := PinnedOf(p.Added[0]); pin == nil || (newest != nil && pin.LatestRequest == "") {
					t.Fatalf("run %d, cut %d: pinned state missing", run, at)
				}
			} else if at < len(rest) || last >= 0 {
				illegal++
				if err == nil {
					t.Fatalf("run %d, cut %d: illegal cut (inside a turn or past the newest request) accepted", run, at)
				}
			}
		}
	}
	t.Logf("%d legal cuts checked, %d illegal cuts refused", legal, illegal)
	if legal < propertyRuns {
		t.Fatalf("only %d legal cuts: generator broken", legal)
	}
}

// TestPropertyPrune prunes 10,000 random histories with small thresholds.
func TestPropertyPrune(t *testing.T) {
	c := Estimator{}
	r := rand.New(rand.NewPCG(7, 7))
	pruned := 0
	for run := 0; run < propertyRuns; run++ {
		view := randomHistory(r, c)
		s := Defaults()
		s.PruneProtectTurns = r.IntN(3)
		s.PruneProtectTokens = r.IntN(300)
		s.PruneMinimum = r.IntN(200)
		if r.IntN(3) == 0 {
			s.ProtectedTools = []string{"grep"}
		}
		p := Prune(c, 50, view, s)
		if p == nil {
			continue
		}
		pruned++
		if err := CheckPlan(c, view, p); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if p.TokensBefore-p.TokensAfter < s.PruneMinimum {
			t.Fatalf("run %d: pruned only %d tokens, minimum %d", run, p.TokensBefore-p.TokensAfter, s.PruneMinimum)
		}
		_, rest := split(view)
		protected := map[int64]bool{}
		users := 0
		for i := len(rest) - 1; i >= 0 && users < s.PruneProtectTurns; i-- {
			protected[rest[i].ID] = true
			if rest[i].Role == persistence.RoleUser {
				users++
			}
		}
		names := map[string]string{}
		for _, m := range view {
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
			}
		}
		for _, id := range p.Compacted {
			for _, m := range view {
				if m.ID == id && (protected[id] || names[m.ToolCallID] == "grep" && len(s.ProtectedTools) > 0) {
					t.Fatalf("run %d: pruned protected message %d", run, id)
				}
			}
		}
		var next int64 = 1 << 40
		checkAfter(t, view, applyInMemory(view, p, &next), fmt.Sprintf("prune run %d", run))
	}
	if pruned < propertyRuns/10 {
		t.Fatalf("only %d of %d histories pruned: generator or thresholds broken", pruned, propertyRuns)
	}
}

// TestPropertyPipeline runs the whole automatic pipeline on 10,000 random
// histories in random small windows, with a model that sometimes fails:
// the result fits, or the error says why; never more than three steps.
func TestPropertyPipeline(t *testing.T) {
	c := Estimator{}
	r := rand.New(rand.NewPCG(9, 1))
	outcomes := map[string]int{}
	for run := 0; run < propertyRuns; run++ {
		view := randomHistory(r, c)
		s := Defaults()
		s.Window = 600 + r.IntN(4000)
		s.PruneMinimum = r.IntN(500)
		s.PruneProtectTokens = r.IntN(1000)
		fixed := 50 + r.IntN(200)
		var next int64 = 1 << 40
		cur := view
		failing := r.IntN(3) == 0
		x := &Compactor{Counter: c, Settings: s,
			Summarize: func(ctx context.Context, req provider.Request) (string, error) {
				if err := checkSummaryRequest(c, req, s); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if failing {
					return "", errors.New("HTTP 500")
				}
				return "## Task\n" + strings.Repeat("word ", r.IntN(2*req.MaxTokens)), nil
			},
			Apply: func(ctx context.Context, p *Plan) ([]persistence.Message, error) {
				cur = applyInMemory(cur, p, &next)
				return cur, nil
			},
		}
		res, err := x.Run(t.Context(), Request{View: view, Fixed: fixed})
		var oe *OverflowError
		switch {
		case err == nil:
			if res.Tokens > s.Budget() && len(res.Plans) > 0 {
				t.Fatalf("run %d: compaction ended at %d tokens, over the budget %d without an error", run, res.Tokens, s.Budget())
			}
			outcomes[fmt.Sprintf("ok after %d steps", len(res.Plans))]++
		case errors.As(err, &oe):
			outcomes["overflow"]++
		case errors.Is(err, ErrStalled):
			outcomes["stalled"]++
		default:
			t.Fatalf("run %d: %v", run, err)
		}
		if len(res.Plans) > 3 {
			t.Fatalf("run %d: %d steps", run, len(res.Plans))
		}
		if len(res.Plans) > 0 {
			checkAfter(t, view, cur, fmt.Sprintf("pipeline run %d", run))
			if want := fixed + ViewTokens(c, cur); res.Tokens != want {
				t.Fatalf("run %d: reported %d tokens, view has %d", run, res.Tokens, want)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["ok after 1 steps"] == 0 || outcomes["ok after 2 steps"] == 0 {
		t.Fatalf("the generator does not exercise the pipeline: %v", outcomes)
	}
}

// checkSummaryRequest: the summary request fits the window with its reply.
func checkSummaryRequest(c Counter, req provider.Request, s Settings) error {
	n := 0
	for _, m := range req.Messages {
		n += messageOverhead + c.Count(m.Content)
	}
	if n+req.MaxTokens > s.Window {
		return fmt.Errorf("summary request of %d tokens + %d reply exceeds the %d window", n, req.MaxTokens, s.Window)
	}
	if len(req.Tools) > 0 {
		return errors.New("summary request offers tools")
	}
	last := req.Messages[len(req.Messages)-1].Content
	for _, sec := range summarySections {
		if !strings.Contains(last, "## "+sec) {
			return fmt.Errorf("summary request lacks section %q", sec)
		}
	}
	return nil
}

// TestStallGuard: when compacting would save less than the stall ratio, the
// plan is not applied and the run says so.
func TestStallGuard(t *testing.T) {
	c := Estimator{}
	h := &history{r: rand.New(rand.NewPCG(1, 1)), c: c}
	h.add(persistence.Message{Role: persistence.RoleUser, Content: "hi"})
	h.add(persistence.Message{Role: persistence.RoleAssistant, Content: "hello"})
	h.add(persistence.Message{Role: persistence.RoleUser, Content: h.text(645)}) // the newest request is most of it
	s := Defaults()
	s.Window = 1600
	applied := 0
	x := &Compactor{Counter: c, Settings: s,
		Summarize: func(context.Context, provider.Request) (string, error) { return "## Task\nsay hi", nil },
		Apply: func(context.Context, *Plan) ([]persistence.Message, error) {
			applied++
			return nil, nil
		}}
	fixed := 60
	if n := fixed + ViewTokens(c, h.msgs); n <= s.Trigger() || n > s.Budget() {
		t.Fatalf("setup: %d tokens, want between the trigger %d and the budget %d", n, s.Trigger(), s.Budget())
	}
	_, err := x.Run(t.Context(), Request{View: h.msgs, Fixed: fixed})
	if !errors.Is(err, ErrStalled) || applied != 0 {
		t.Fatalf("Run = %v with %d plans applied; want ErrStalled and nothing applied", err, applied)
	}
}

// TestPruneDefaults: with the documented defaults, pruning keeps the newest
// 40k tokens of tool output and the last two user turns, and reclaims at
// least 20k tokens or does nothing.
func TestPruneDefaults(t *testing.T) {
	c := Estimator{}
	view := benchView(c, 120000)
	s := Defaults()
	p := Prune(c, 100, view, s)
	if p == nil {
		t.Fatal("nothing pruned from 120k tokens of tool output")
	}
	if err := CheckPlan(c, view, p); err != nil {
		t.Fatal(err)
	}
	pruned := map[int64]bool{}
	for _, id := range p.Compacted {
		pruned[id] = true
	}
	keptTool, users := 0, 0
	for i := len(view) - 1; i >= 0; i-- {
		m := view[i]
		if m.Role == persistence.RoleUser {
			users++
		}
		if m.Role != persistence.RoleTool || pruned[m.ID] {
			continue
		}
		keptTool += m.TokenCount
	}
	newest := 0
	for i := len(view) - 1; i >= 0 && newest < s.PruneProtectTokens; i-- {
		if view[i].Role == persistence.RoleTool {
			if pruned[view[i].ID] {
				t.Fatalf("message %d is within the newest %d tokens of tool output but was pruned", view[i].ID, s.PruneProtectTokens)
			}
			newest += view[i].TokenCount
		}
	}
	if p.TokensBefore-p.TokensAfter < s.PruneMinimum {
		t.Fatalf("reclaimed %d tokens, minimum %d", p.TokensBefore-p.TokensAfter, s.PruneMinimum)
	}
	small := benchView(c, 45000) // under 40k protected + 20k minimum: nothing to do
	if p := Prune(c, 100, small, s); p != nil {
		t.Fatalf("pruned %d messages of a 45k view; the 20k minimum cannot be reached", len(p.Compacted))
	}
}
