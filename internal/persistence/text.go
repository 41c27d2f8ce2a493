package persistence

import (
	"strings"
	"unicode/utf8"
)

// ValidText returns s with NUL and every byte that is not part of valid
// UTF-8 replaced by U+FFFD, one for each byte as encoding/json does: text
// that any store (PostgreSQL's text type accepts neither) and any JSON
// encoder keep as it is. Valid text is returned unchanged.
func ValidText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // an invalid byte comes as utf8.RuneError
		if r == 0 {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}
