package secret

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Redacted replaces a secret in model text.
const Redacted = "[redacted]"

// minStreamSecret is the shortest secret removed from model text: a model
// writes short words and numbers all the time, and an API key is longer.
const minStreamSecret = 8

// Stream removes secrets from text that arrives in pieces (a model's
// streamed reply): a secret split across pieces is still caught. Write
// holds back only the end of what it was given that is the start of a
// secret (at most the longest secret less one byte); the next Write or
// Flush releases it. Text that ends in no secret's start is shown at once,
// so a reply that stalls is not hidden. A Stream is used by one goroutine.
type Stream struct {
	secrets []string // longest first
	fail    [][]int  // KMP failure function of each secret
	tail    string   // held back
}

// NewStream redacts the given secrets (those shorter than 8 bytes are
// ignored). With none, Write returns its input unchanged.
func NewStream(secrets ...string) *Stream {
	s := &Stream{}
	seen := map[string]bool{}
	for _, sec := range secrets {
		if len(sec) >= minStreamSecret && !seen[sec] {
			seen[sec] = true
			s.secrets = append(s.secrets, sec)
		}
	}
	sort.SliceStable(s.secrets, func(i, j int) bool { return len(s.secrets[i]) > len(s.secrets[j]) })
	for _, sec := range s.secrets {
		s.fail = append(s.fail, failure(sec))
	}
	return s
}

// failure is the KMP failure function of p: f[i] is the length of the
// longest proper prefix of p[:i+1] that is also its suffix.
func failure(p string) []int {
	f := make([]int, len(p))
	for i, k := 1, 0; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = f[k-1]
		}
		if p[i] == p[k] {
			k++
		}
		f[i] = k
	}
	return f
}

// partial is the length of the longest end of buf that is the start of a
// secret, shorter than it (a secret that may continue in the next piece).
func (s *Stream) partial(buf string) int {
	longest := 0
	for i, sec := range s.secrets {
		// Only the last len(sec)-1 bytes can hold a proper prefix of sec.
		from := max(0, len(buf)-(len(sec)-1))
		k := 0
		for j := from; j < len(buf); j++ {
			for k > 0 && buf[j] != sec[k] {
				k = s.fail[i][k-1]
			}
			if buf[j] == sec[k] {
				k++
			}
			if k == len(sec) { // cannot happen in len(sec)-1 bytes; kept safe
				k = s.fail[i][k-1]
			}
		}
		longest = max(longest, k)
	}
	return longest
}

// Write takes the next piece and returns what may be shown of the text so
// far: redacted, without the held-back tail.
func (s *Stream) Write(piece string) string {
	if len(s.secrets) == 0 {
		return piece
	}
	buf := s.tail + piece
	out, rest := s.redact(buf, len(buf)-s.partial(buf))
	s.tail = rest
	return out
}

// Flush returns the held-back tail, redacted; the stream can be reused.
func (s *Stream) Flush() string {
	if len(s.secrets) == 0 {
		return ""
	}
	out, _ := s.redact(s.tail, len(s.tail))
	s.tail = ""
	return out
}

// Text redacts a whole text at once.
func (s *Stream) Text(text string) string {
	if len(s.secrets) == 0 {
		return text
	}
	out, _ := s.redact(text, len(text))
	return out
}

// redact returns buf up to cut with every secret that starts before cut
// replaced (one that starts before cut and ends after it is replaced
// whole and moves cut to its end), and what is left after it. A secret
// cut short at the end of buf is an end of buf that starts a secret, so
// it starts at or after len(buf)-partial(buf): it is in what is left.
func (s *Stream) redact(buf string, cut int) (out, rest string) {
	cut = max(cut, 0)
	// Never end the shown part inside a UTF-8 sequence: the client would
	// get a broken character.
	for back := 0; cut > 0 && cut < len(buf) && !utf8.RuneStart(buf[cut]) && back < utf8.UTFMax; back++ {
		cut--
	}
	var b strings.Builder
	next := make([]int, len(s.secrets)) // cached index of each secret at or after pos; -1: none
	for i := range next {
		next[i] = -2 // not looked up yet
	}
	pos := 0
	for {
		at, which := -1, -1
		for i, sec := range s.secrets {
			if next[i] == -2 || (next[i] >= 0 && next[i] < pos) {
				if j := strings.Index(buf[pos:], sec); j >= 0 {
					next[i] = pos + j
				} else {
					next[i] = -1
				}
			}
			if next[i] >= 0 && (at < 0 || next[i] < at) { // ties: the longer, listed first
				at, which = next[i], i
			}
		}
		if at < 0 || at >= cut {
			break
		}
		b.WriteString(buf[pos:at])
		b.WriteString(Redacted)
		pos = at + len(s.secrets[which])
		cut = max(cut, pos)
	}
	if pos < cut {
		b.WriteString(buf[pos:cut])
		pos = cut
	}
	return b.String(), buf[pos:]
}
