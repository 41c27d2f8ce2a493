package compaction

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestEstimatorControlBytes: every byte below 0x20 and DEL is counted and
// passed over. The old loop never advanced on them: an ANSI colour code in
// a prompt hung the turn at 100% CPU (issue 14, case 1).
func TestEstimatorControlBytes(t *testing.T) {
	for b := 0; b < 0x80; b++ {
		text := "fix " + string(rune(b)) + "[31merror\n"
		if n := estimateCount(t, text); n <= 0 {
			t.Errorf("byte %#x: %d tokens", b, n)
		}
	}
	if n := estimateCount(t, "fix \033[31merror\033[0m\x07\x0c\x7f\n"); n < 8 {
		t.Errorf("ANSI text counted %d tokens, want at least one per control byte", n)
	}
}

// estimateCount counts text with the estimator in its own goroutine, so a
// loop that never ends fails the test instead of hanging it.
func estimateCount(t *testing.T, text string) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- Estimator{}.Count(text) }()
	select {
	case n := <-done:
		return n
	case <-t.Context().Done():
	}
	t.Fatalf("estimator never returned on %q", text)
	return 0
}

// TestCountContextMatchesCount: counting in pieces gives the count of the
// whole, for both kinds of counter, on multi-piece texts.
func TestCountContextMatchesCount(t *testing.T) {
	o200k, err := NewCounter("", EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{
		"prose":  strings.Repeat(proseSample+"\n", 200),
		"code":   strings.Repeat("func f(a, b int) int {\n\treturn a + b\n}\n", 5000),
		"ansi":   strings.Repeat("ok \033[32mpass\033[0m\n", 20000),
		"mixed":  strings.Repeat("日本語のテキスト\nline 2\n", 8000),
		"blob":   strings.Repeat("a1", 100000),
		"spaces": strings.Repeat(" ", 200000) + "\nx",
	}
	for name, text := range texts {
		if len(text) <= countPiece {
			t.Fatalf("%s: %d bytes is one piece", name, len(text))
		}
		for _, c := range []Counter{Estimator{}, o200k} {
			got, err := CountContext(context.Background(), c, text)
			if err != nil {
				t.Fatal(err)
			}
			// blob and spaces have no line start to cut at: a few
			// tokens apart. The others must be exact.
			slack := 0
			if name == "blob" || name == "spaces" {
				slack = 2
			}
			if want := c.Count(text); got < want-slack || got > want+slack {
				t.Errorf("%s (%s): pieces %d, whole %d", name, c.Name(), got, want)
			}
		}
	}
}

// TestCountContextCancelled: a cancelled context stops counting with its
// error instead of walking the text.
func TestCountContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CountContext(ctx, Estimator{}, strings.Repeat("x", 10<<20)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// FuzzEstimator: every run the estimator weighs consumes at least one byte
// (so Count is linear in the length: it always ends) and weighs at most
// maxRunTenths per byte; the cancellable count is the same count.
func FuzzEstimator(f *testing.F) {
	for b := 0; b < 0x100; b++ {
		f.Add([]byte{byte(b)})
		f.Add([]byte("fix " + string([]byte{byte(b)}) + "[31merror\n"))
	}
	f.Add([]byte("\033[31mred\033[0m \033[1;4;38;5;208mbold\033[K\r\n\x07\x0c\x1b]0;title\x07"))
	f.Add([]byte("\xff\xfe\xc0\xaf\xed\xa0\x80 invalid \xe6\x97 utf-8 \xf4\x90\x80\x80"))
	f.Add([]byte(strings.Repeat("\x7f", 4096)))
	f.Add([]byte(strings.Repeat("\x00\x01\x02\x1f", 1<<18)))
	f.Add([]byte(strings.Repeat("word 123 {}\t\n", 1<<16)))
	f.Add([]byte(strings.Repeat("Zm9vYmFy0123", 1<<16)))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := string(in)
		total := 0
		for i := 0; i < len(s); {
			n, tenths := estimateRun(s[i:])
			if n < 1 || n > len(s)-i {
				t.Fatalf("run at %d of %q: length %d", i, s, n)
			}
			if tenths < 0 || tenths > maxRunTenths*n {
				t.Fatalf("run %q weighs %d tenths", s[i:i+n], tenths)
			}
			total += tenths
			i += n
		}
		got := Estimator{}.Count(s)
		if got != (total+9)/10 || got > 2*len(s) {
			t.Fatalf("count %d of %d bytes (runs: %d tenths)", got, len(s), total)
		}
		if n, err := CountContext(context.Background(), Estimator{}, s); err != nil || n != got {
			t.Fatalf("CountContext %d, %v; Count %d", n, err, got)
		}
	})
}
