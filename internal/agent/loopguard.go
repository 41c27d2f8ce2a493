package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// The loop guard stops a model that repeats one failing call: without it a
// model can send the same broken call hundreds of times in a turn
// (opencode #19040: 295 consecutive failures).
const (
	// loopFailures identical calls in a row that failed make the next
	// identical one refused without running it.
	loopFailures = 2
	// loopRefusals refused calls in one turn end the turn.
	loopRefusals = 3
)

// loopGuard watches the tool calls of one turn. A nil guard watches
// nothing.
type loopGuard struct {
	failed  map[string]failedCall // by call key: identical calls that failed in a row
	refused int
}

type failedCall struct {
	n    int
	last string // the last failure's text, for the refusal
}

func newLoopGuard() *loopGuard { return &loopGuard{failed: make(map[string]failedCall)} }

// key identifies a call by its tool and its arguments, normalised (key
// order and spacing do not make a call different).
func (g *loopGuard) key(name, args string) string {
	var v any
	if json.Unmarshal([]byte(args), &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = string(b)
		}
	}
	return name + "\x00" + args
}

// observe records the result of a call that ran (or failed to start).
func (g *loopGuard) observe(key string, res tool.Result) {
	if g == nil {
		return
	}
	if !res.Failed {
		delete(g.failed, key)
		return
	}
	f := g.failed[key]
	f.n++
	f.last = strings.TrimPrefix(abbreviate(res.Output, 500), "Error: ")
	g.failed[key] = f
}

// refuse returns why the call must not run ("" if it may).
func (g *loopGuard) refuse(key string) string {
	if g == nil {
		return ""
	}
	f := g.failed[key]
	if f.n < loopFailures {
		return ""
	}
	g.refused++
	return fmt.Sprintf("not run: this exact call failed %d times in a row in this turn (last error: %s). "+
		"Running it again will fail the same way. Change the arguments or try another approach: "+
		"read the file again to see its current text, search for what you are looking for, list the directory, "+
		"or ask the user.", f.n, f.last)
}

// stopped reports whether the model kept repeating refused calls: the turn
// ends.
func (g *loopGuard) stopped() bool { return g != nil && g.refused >= loopRefusals }

// loopStopUpdate tells the user why the turn stopped, outside the
// conversation: a notice where the client takes them, else a failed
// tool-call card (not stored).
func loopStopUpdate(caps acp.ClientCapabilities) acp.SessionUpdate {
	const title = "Stopped: the model kept repeating a failing tool call"
	desc := fmt.Sprintf("The model kept sending a tool call that had already failed %d times in a row (%d repeats were refused), so the turn was ended. "+
		"Tell it what to do differently, or try another model.", loopFailures, loopRefusals)
	if caps.SupportsNotices() {
		return acp.Notice{Severity: "warning", Title: title, Description: desc}.Update()
	}
	return acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: request.NewID("loop_"), Title: title, Kind: acp.ToolKindOther,
		Status: acp.ToolStatusFailed, Content: []acp.ToolCallContent{acp.ToolText(desc)}}}
}
