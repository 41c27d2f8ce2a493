package agent

import (
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

func TestLoopGuard(t *testing.T) {
	g := newLoopGuard()
	a := g.key("read_file", `{"path":"a.go","limit":5}`)
	if b := g.key("read_file", `{ "limit": 5, "path": "a.go" }`); a != b {
		t.Fatalf("key order or spacing made two calls different: %q %q", a, b)
	}
	other := g.key("read_file", `{"path":"b.go","limit":5}`)
	fail := tool.Failure("file not found: a.go")

	g.observe(a, fail)
	g.observe(other, fail)
	if g.refuse(a) != "" {
		t.Fatal("refused after one failure")
	}
	g.observe(a, tool.Result{Output: "ok"}) // a success clears the count
	g.observe(a, fail)
	if g.refuse(a) != "" {
		t.Fatal("a success in between did not reset the count")
	}
	g.observe(a, fail)
	why := g.refuse(a)
	if !strings.Contains(why, "failed 2 times") || !strings.Contains(why, "file not found: a.go") || strings.Contains(why, "Error: ") {
		t.Fatalf("refusal: %q", why)
	}
	if g.refuse(other) != "" || g.stopped() {
		t.Fatal("another call was refused, or the turn stopped after one refusal")
	}
	g.refuse(a)
	g.refuse(a)
	if !g.stopped() {
		t.Fatal("three refusals did not stop the turn")
	}
	var none *loopGuard
	none.observe(a, fail)
	if none.refuse(a) != "" || none.stopped() {
		t.Fatal("a nil guard guards")
	}
}
