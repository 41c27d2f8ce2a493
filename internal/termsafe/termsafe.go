// Package termsafe makes untrusted text (the model's, a workspace file's,
// an endpoint's) safe to print on a terminal: every byte that a terminal
// would act on instead of showing is replaced by a visible stand-in, so
// that text cannot move the cursor, clear the screen, set the window title,
// write the clipboard (OSC 52), reorder what is shown (bidi overrides) or
// hide itself. Nothing is dropped: a person sees that it was there.
//
// The stand-ins: C0 controls and DEL in caret notation (ESC is ^[, so an
// escape sequence shows whole, as `^[[2K` or `^[]52;c;…^G`); C1 controls
// and invisible format characters as <U+202E>; a byte that is not UTF-8 as
// <0xFF>. The escape sequences are not parsed: with their introducer made
// visible (ESC, or C1's CSI, OSC and DCS) none of them can take effect.
package termsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text is s for a context that shows several lines (an answer, a diff, a
// session's messages): newlines and tabs stay, a CR directly before a
// newline is removed (CRLF ends a line the same way), and everything
// else unsafe is made visible.
func Text(s string) string { return clean(s, true) }

// Line is s for a one-line context (a title, a table cell, a question):
// newlines, CRs and tabs are made visible too.
func Line(s string) string { return clean(s, false) }

func clean(s string, multiline bool) string {
	i := firstUnsafe(s, multiline)
	if i == len(s) {
		return s // the common case: nothing to do, no allocation
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case multiline && (c == '\n' || c == '\t'):
				b.WriteByte(c)
			case multiline && c == '\r' && i+1 < len(s) && s[i+1] == '\n':
				// CRLF: the line ends either way.
			case c < 0x20:
				b.WriteByte('^')
				b.WriteByte(c + '@')
			case c == 0x7f:
				b.WriteString("^?")
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeHex(&b, "<0x", rune(c), 2)
		case unsafeRune(r):
			writeHex(&b, "<U+", r, 4)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// writeHex writes prefix, r in upper-case hex of at least width digits
// and ">".
func writeHex(b *strings.Builder, prefix string, r rune, width int) {
	var buf [16]byte
	d := strconv.AppendInt(buf[:0], int64(r), 16)
	b.WriteString(prefix)
	for range width - len(d) {
		b.WriteByte('0')
	}
	for _, c := range d {
		if c >= 'a' {
			c -= 'a' - 'A'
		}
		b.WriteByte(c)
	}
	b.WriteByte('>')
}

// firstUnsafe is the index of the first byte clean must change, or len(s).
func firstUnsafe(s string, multiline bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f || (c < 0x20 && !(multiline && (c == '\n' || c == '\t'))) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return len(s)
}

// unsafeRune: a control character (C0, DEL, C1), a line or paragraph
// separator, or an invisible format character (Unicode category Cf: the
// bidi embeddings, overrides, isolates and marks, zero-width spaces, the
// BOM, tag characters). The zero-width joiner and non-joiner stay: emoji
// sequences and several scripts need them, and they reorder nothing.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20 || (r >= 0x7f && r <= 0x9f):
		return true
	case r < 0xad:
		return false
	case r == 0x200c || r == 0x200d:
		return false
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// JSON returns encoded JSON (as encoding/json writes it) with every rune
// Text would make visible written as a \u escape instead. The value is
// unchanged, so a tool reads exactly what was stored, but the bytes are
// safe to print: encoding/json escapes C0 controls itself, not DEL, C1
// or the bidi controls. Outside strings JSON is ASCII, so only string
// contents change.
func JSON(b []byte) []byte {
	i := firstUnsafeJSON(b)
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if (r >= 0x20 && unsafeRune(r)) || r == 0x7f {
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func firstUnsafeJSON(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			if b[i] == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if unsafeRune(r) {
			return i
		}
		i += n
	}
	return len(b)
}
