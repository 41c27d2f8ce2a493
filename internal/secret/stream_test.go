package secret

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// streamAll feeds pieces to a Stream and returns everything it let out.
func streamAll(s *Stream, pieces ...string) string {
	var b strings.Builder
	for _, p := range pieces {
		b.WriteString(s.Write(p))
	}
	b.WriteString(s.Flush())
	return b.String()
}

// A key split at every position (and between every pair of positions)
// of a streamed reply is still replaced, and nothing else changes.
func TestStreamKeySplitAnywhere(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	text := "before " + key + " middé " + key + key + " after"
	want := "before [redacted] middé [redacted][redacted] after"
	if got := NewStream(key).Text(text); got != want {
		t.Fatalf("Text = %q, want %q", got, want)
	}
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j += 3 {
			s := NewStream(key, "short")
			var shown []string
			for _, p := range []string{text[:i], text[i:j], text[j:]} {
				shown = append(shown, s.Write(p))
			}
			shown = append(shown, s.Flush())
			if got := strings.Join(shown, ""); got != want {
				t.Fatalf("split %d,%d: %q, want %q", i, j, got, want)
			}
		}
	}
}

// Only an end that starts a key is held back: other text is shown at once
// (a reply that stalls is not hidden), and a key under 8 bytes is ignored.
func TestStreamHoldsBackOnlyAKeysStart(t *testing.T) {
	s := NewStream("sk-0123456789", "tiny")
	for _, c := range []struct{ in, out string }{
		{"hello world", "hello world"},
		{", ask", ", a"}, // "sk" may start the key
		{"-01", ""},      // "sk-01" still may
		{"x", "sk-01x"},  // not any more
		{"sk-0123", ""},  // may
		{"456789!", "[redacted]!"},
	} {
		if got := s.Write(c.in); got != c.out {
			t.Fatalf("Write(%q) = %q, want %q", c.in, got, c.out)
		}
	}
	s.Write("ends with s")
	if got := s.Flush(); got != "s" {
		t.Fatalf("Flush = %q, want the held s", got)
	}
	if s := NewStream("seven77", ""); s.Write("seven77") != "seven77" {
		t.Fatal("a key under 8 bytes was redacted")
	}
	// A key whose start repeats in itself (KMP's case).
	k := NewStream("aab-aab-aac")
	if got := k.Write("xaab-aab-aab-aa"); got != "xaab-" {
		t.Fatalf("held back wrong part: shown %q", got)
	}
	if got := k.Write("c."); got != "[redacted]." {
		t.Fatalf("the key split after a false start: %q", got)
	}
}

func FuzzRedactStream(f *testing.F) {
	const key = "sk-fuzz-0123456789"
	for i := 0; i <= len(key); i++ {
		f.Add("pre "+key[:i], key[i:]+" post", key, uint8(i))
	}
	f.Add("\x1b[2K\r\x00"+key[:5], key[5:]+"\u202e\x7f", key, uint8(3))
	f.Add("\xff\xfe"+key[:9], key[9:]+"\xc3", key, uint8(1))
	f.Add(strings.Repeat(key[:10], 5000), strings.Repeat(key, 3000), key, uint8(7))
	f.Add("ééé", "ééé", "éééééééé", uint8(1))
	f.Fuzz(func(t *testing.T, a, b, k string, step uint8) {
		s := NewStream(k)
		whole := a + b
		want := s.Text(whole)
		// Feed in pieces of step bytes, then the rest.
		n := int(step%16) + 1
		var pieces []string
		for rest := whole; rest != ""; {
			m := min(n, len(rest))
			pieces = append(pieces, rest[:m])
			rest = rest[m:]
		}
		got := streamAll(s, pieces...)
		if got != want {
			t.Fatalf("streamed %q, whole %q", got, want)
		}
		if len(k) >= minStreamSecret && !strings.ContainsAny(k, "[]") && !strings.Contains(Redacted, k) && strings.Contains(got, k) {
			t.Fatalf("the key survived: %q", got)
		}
		if utf8.ValidString(whole) && !utf8.ValidString(got) {
			t.Fatalf("valid input became invalid UTF-8: %q", got)
		}
	})
}
