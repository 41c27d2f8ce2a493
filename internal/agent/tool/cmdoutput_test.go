package tool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/acp"
)

// A command printing a line at a time reaches the client as several
// updates while it runs, each with the lines so far, and none after the
// call returned (issue 41: live output; claude-agent-acp #651).
func TestRunLocalShowsOutputWhileItRuns(t *testing.T) {
	defer func(e, s time.Duration) { liveEvery, liveEverySlow = e, s }(liveEvery, liveEverySlow)
	liveEvery, liveEverySlow = 50*time.Millisecond, 50*time.Millisecond
	env := &Env{Roots: []string{t.TempDir()}, OutputLimit: 1 << 20}
	var updates []string
	returned := false
	r := runLocal(context.Background(), env, "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.15; done", time.Minute,
		func(c []acp.ToolCallContent) {
			if returned {
				t.Error("an update after the call returned")
			}
			if len(c) != 1 || c[0].Content == nil || c[0].Content.Content.Text == nil {
				t.Errorf("update content = %+v, want one text block", c)
				return
			}
			updates = append(updates, c[0].Content.Content.Text.Text)
		})
	returned = true
	if len(updates) < 3 {
		t.Fatalf("%d live updates, want at least 3: %q", len(updates), updates)
	}
	if !strings.Contains(updates[0], "line 1") || strings.Contains(updates[0], "line 6") {
		t.Errorf("first update %q: want the first line only so far", updates[0])
	}
	if !strings.Contains(r.Output, "line 6") {
		t.Errorf("final output lost lines: %q", r.Output)
	}
}

// A silent command sends no update: nothing new, nothing sent.
func TestRunLocalSilentCommandSendsNothing(t *testing.T) {
	defer func(e time.Duration) { liveEvery = e }(liveEvery)
	liveEvery = 20 * time.Millisecond
	env := &Env{Roots: []string{t.TempDir()}, OutputLimit: 1 << 20}
	n := 0
	runLocal(context.Background(), env, "sleep 0.3", time.Minute, func([]acp.ToolCallContent) { n++ })
	if n != 0 {
		t.Fatalf("%d updates for a command that printed nothing", n)
	}
}

func TestLiveTailKeepsLastLinesBounded(t *testing.T) {
	var l liveTail
	for i := range 5000 {
		fmt.Fprintf(&l, "line %d\n", i)
	}
	text, ok := l.take()
	if !ok {
		t.Fatal("nothing to show after writes")
	}
	if len(text) > liveTailBytes+100 {
		t.Fatalf("tail of %d bytes, bound %d", len(text), liveTailBytes)
	}
	if !strings.HasSuffix(text, "line 4999\n") || !strings.HasPrefix(text, "[... ") {
		t.Fatalf("tail %q: want the last line and a note of what is hidden", text[:80])
	}
	if first := strings.SplitN(text, "\n", 3)[1]; !strings.HasPrefix(first, "line ") {
		t.Fatalf("tail starts mid-line: %q", first)
	}
	if _, ok := l.take(); ok {
		t.Fatal("take reported news twice for one write")
	}
	// A cut inside a multi-byte rune still gives valid UTF-8.
	var u liveTail
	u.Write([]byte(strings.Repeat("é", liveTailBytes)))
	if s, _ := u.take(); !utf8.ValidString(s) {
		t.Fatal("invalid UTF-8 in the live tail")
	}
}

func TestLivePacerBounds(t *testing.T) {
	var p livePacer
	now := time.Unix(0, 0)
	sent := 0
	for range 100000 {
		if p.ready(now) {
			p.sentAt(now)
			sent++
		}
		now = now.Add(time.Second)
	}
	if sent != liveMaxUpdates {
		t.Fatalf("%d updates sent, want the cap %d", sent, liveMaxUpdates)
	}
	var q livePacer
	start := time.Unix(0, 0)
	q.sentAt(start)
	if q.ready(start.Add(liveEvery / 2)) {
		t.Fatal("an update sooner than liveEvery")
	}
}

func FuzzLiveTail(f *testing.F) {
	f.Add([]byte("plain\nlines\n"), 3)
	f.Add([]byte("\x1b[31mred\x00\x07\r\n"), 1)
	f.Add([]byte{0xff, 0xfe, 0xc3, '\n', 0xe2, 0x82}, 7)
	f.Add([]byte(strings.Repeat("x", 3*liveTailBytes)), 2)
	f.Fuzz(func(t *testing.T, b []byte, parts int) {
		var l liveTail
		if parts <= 0 {
			parts = 1
		}
		step := len(b)/min(parts, 64) + 1
		for i := 0; i < len(b); i += step {
			l.Write(b[i:min(i+step, len(b))])
		}
		text, ok := l.take()
		if ok != (len(b) > 0) {
			t.Fatalf("take ok=%v for %d bytes", ok, len(b))
		}
		if !utf8.ValidString(text) || len(text) > 4*liveTailBytes+100 {
			t.Fatalf("bad tail: valid=%v len=%d", utf8.ValidString(text), len(text))
		}
	})
}
