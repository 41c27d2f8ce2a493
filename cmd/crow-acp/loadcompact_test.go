package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	sysprompt "github.com/crow-acp/crow-acp/agent/prompt"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestLoadNothingToCompactBinary is issue 29's finding 1 against the real
// binary: one long turn stored, then loaded by a client that advertises
// session.compaction (as exec does) with a window where the context is
// over the compaction threshold but fits and nothing can be cut. The
// process used to panic right after the load response (exit 2); now it
// reports the compaction, stays up and answers the next prompt.
func TestLoadNothingToCompactBinary(t *testing.T) {
	bin := testBinary(t)
	model, _, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "noted"})
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{"CROW_LOG_LEVEL": "warn"}
		for k, v := range env {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	const init = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}}`
	load := func(p *agentProc, sid string) [][]byte {
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
		frames := p.until("1", 10*time.Second)
		if !strings.Contains(string(frames[len(frames)-1]), `"result"`) {
			t.Fatalf("session/load: %s", frames[len(frames)-1])
		}
		return frames
	}

	big := with(map[string]string{"CROW_CONTEXT_WINDOW": "100000"})
	p := startProc(t, bin, big)
	p.send(init)
	p.until("0", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
	sid := sessionIDOf(t, p.until("1", 10*time.Second))
	long := strings.Repeat("the parser returns an error when the input is empty and we add a test for it ", 60)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":` + strconv.Quote(long) + `}]}}`)
	p.until("2", 10*time.Second)
	p.close()

	// The size of the stored context as a new process counts it on load.
	// The system prompt's tier follows the window, so it is measured with a
	// window of the tier the last process will have (below
	// sysprompt.CompactFrom), large enough that this load compacts nothing.
	measure := with(map[string]string{"CROW_CONTEXT_WINDOW": strconv.Itoa(sysprompt.CompactFrom - 1)})
	p = startProc(t, bin, measure)
	p.send(init)
	p.until("0", 10*time.Second)
	load(p, sid)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"_crow/context/build","params":{"sessionId":"` + sid + `"}}`)
	frames := p.until("2", 10*time.Second)
	var built struct {
		Result struct{ Tokens int } `json:"result"`
	}
	if err := json.Unmarshal(frames[len(frames)-1], &built); err != nil || built.Result.Tokens == 0 {
		t.Fatalf("_crow/context/build: %s", frames[len(frames)-1])
	}
	p.close()

	// Over the 0.9 threshold, under the budget, one turn: nothing to cut.
	const reserve = 256
	if w := built.Result.Tokens + 40 + reserve; sysprompt.TierFor(w) != sysprompt.TierFor(sysprompt.CompactFrom-1) {
		t.Fatalf("a %d-token window has another prompt tier than the one measured: the test does not reach its case", w)
	}
	p = startProc(t, bin, with(map[string]string{"CROW_CONTEXT_WINDOW": strconv.Itoa(built.Result.Tokens + 40 + reserve),
		"CROW_OUTPUT_RESERVE": strconv.Itoa(reserve)}))
	p.send(init)
	p.until("0", 10*time.Second)
	load(p, sid)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"and now?"}]}}`)
	frames = p.until("2", 20*time.Second)
	all := ""
	for _, f := range frames {
		all += string(f) + "\n"
	}
	if !strings.Contains(all, `"compaction_update"`) || !strings.Contains(all, "nothing it could compact") {
		t.Fatalf("no compaction_update saying nothing could be compacted; frames:\n%s", all)
	}
	if !strings.Contains(string(frames[len(frames)-1]), `"end_turn"`) {
		t.Fatalf("prompt after the load: %s\nstderr:\n%s", frames[len(frames)-1], p.logs())
	}
	if strings.Contains(p.logs(), "panic") {
		t.Fatalf("stderr mentions a panic:\n%s", p.logs())
	}
	p.close()
}
