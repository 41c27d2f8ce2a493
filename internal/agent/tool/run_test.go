package tool

import (
	"context"
	"fmt"
	"github.com/crow-acp/crow-acp/acp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Zed labels a command's embedded terminal with the tool call's title: it
// must be the command line itself (issue 15 item 6).
func TestCommandTitleIsTheCommandLine(t *testing.T) {
	long := strings.Repeat("é", maxTitleRunes+10)
	for in, want := range map[string]string{
		"go test ./...":            "go test ./...",
		"  make  \n":               "make",
		"set -e\nmake\nmake check": "set -e …",
		long:                       strings.Repeat("é", maxTitleRunes) + "…",
	} {
		got := commandTitle(in)
		if got != want {
			t.Errorf("commandTitle(%q) = %q, want %q", in, got, want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("commandTitle(%q) is not valid UTF-8", in)
		}
	}
}

// A command whose output passes the cap keeps its head and its tail (the
// end says how it ended), not only the head (issue 15 item 11).
func TestCommandOutputKeepsHeadAndTail(t *testing.T) {
	env := &Env{Roots: []string{t.TempDir()}, CommandOutputCap: 1000, OutputLimit: 1 << 20}
	r := runLocal(context.Background(), env, "seq 1 100000; echo FAILED at the end", time.Minute, func([]acp.ToolCallContent) {})
	if !strings.Contains(r.Output, "\n1\n2\n3\n") || !strings.Contains(r.Output, "99999\n100000\nFAILED at the end") {
		t.Fatalf("head or tail lost:\n%s", r.Output)
	}
	if !strings.Contains(r.Output, "bytes of output dropped") || len(r.Output) > 1200 {
		t.Fatalf("the cap is not applied or not said (%d bytes):\n%s", len(r.Output), r.Output)
	}
}

func TestCapBuffer(t *testing.T) {
	for _, limit := range []int{0, 1, 2, 7, 64} {
		var want strings.Builder
		c := &capBuffer{limit: limit}
		for i := 0; i < 50; i++ {
			chunk := strings.Repeat(string(rune('a'+i%26)), i%9)
			want.WriteString(chunk)
			_, _ = c.Write([]byte(chunk))
		}
		got, cut := c.result()
		all := want.String()
		if len(all) <= limit {
			if cut || got != all {
				t.Errorf("limit %d: %q (cut %v), want all of %q", limit, got, cut, all)
			}
			continue
		}
		head, tail := all[:limit/2], all[len(all)-(limit-limit/2):]
		if !cut || !strings.HasPrefix(got, head) || !strings.HasSuffix(got, tail) ||
			!strings.Contains(got, fmt.Sprintf("[... %d bytes of output dropped ...]", len(all)-limit)) {
			t.Errorf("limit %d: %q, want head %q, tail %q and %d dropped", limit, got, head, tail, len(all)-limit)
		}
	}
}

// Replayed command output is fenced as file reads are: a fence longer
// than any run of backticks in the output.
func TestReplayTextFencesLikeFileReads(t *testing.T) {
	out := "before\n```\nnot the end\n```\nafter\n"
	got := ReplayText(out)
	if got != fenced("", out) || !strings.HasPrefix(got, "````\n") || !strings.HasSuffix(got, "\n````") {
		t.Fatalf("ReplayText = %q", got)
	}
}
