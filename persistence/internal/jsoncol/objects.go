package jsoncol

import (
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeObjects is DecodeSlice for a slice of structs whose fields are all
// strings (message parts, tool calls), read without reflection from a
// column read as a string (not NULL): a session load decodes one such
// column per message. set stores the value of key in *v and reports
// whether key is one of v's JSON names, spelled exactly. The values that
// needed no unescaping are substrings of s, not copies.
//
// It reads the compact form Slice writes ([{"key":"value",...},...]); for
// anything else (whitespace, null, other value types, keys set does not
// know, bad JSON) it returns what DecodeSlice returns, so the result is
// always encoding/json's.
func DecodeObjects[T any](field string, s string, set func(v *T, key, val string) bool) ([]T, error) {
	if out, ok := decodeObjects(s, set); ok {
		return out, nil
	}
	return DecodeSlice[T](field, []byte(s))
}

// decodeObjects reads b in the compact form; ok is false for anything else.
func decodeObjects[T any](b string, set func(v *T, key, val string) bool) (out []T, ok bool) {
	if len(b) < 2 || b[0] != '[' {
		return nil, false
	}
	i := 1
	out = []T{}
	if b[i] == ']' {
		return out, i+1 == len(b)
	}
	for {
		if i >= len(b) || b[i] != '{' {
			return nil, false
		}
		i++
		out = append(out, *new(T))
		v := &out[len(out)-1]
		if i < len(b) && b[i] == '}' {
			i++
		} else {
			for {
				var key, val string
				if key, i, ok = readString(b, i, true); !ok || i >= len(b) || b[i] != ':' {
					return nil, false
				}
				if val, i, ok = readString(b, i+1, false); !ok || !set(v, key, val) {
					return nil, false
				}
				if i >= len(b) {
					return nil, false
				}
				if b[i] == '}' {
					i++
					break
				}
				if b[i] != ',' {
					return nil, false
				}
				i++
			}
		}
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ']':
			return out, i+1 == len(b)
		case ',':
			i++
		default:
			return nil, false
		}
	}
}

// readString reads the JSON string starting at b[i] as encoding/json
// decodes it into a string (invalid UTF-8 and lone surrogates become
// U+FFFD) and returns it with the index after its closing quote. A key
// (plain) must have no escapes and be ASCII: encoding/json matches keys
// more loosely than set does, so such keys go to encoding/json.
func readString(b string, i int, plain bool) (s string, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	i++
	start := i
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return b[start:i], i + 1, true
		case c < ' ':
			return "", 0, false
		case c >= utf8.RuneSelf && !plain:
			r, size := utf8.DecodeRuneInString(b[i:])
			if r == utf8.RuneError && size == 1 {
				return unquote(b, start, i)
			}
			i += size
			continue
		case c == '\\' || c >= utf8.RuneSelf:
			if plain {
				return "", 0, false
			}
			return unquote(b, start, i)
		}
		i++
	}
	return "", 0, false
}

// unquote finishes reading a string whose content starts at b[start] and
// needs decoding from b[i] on.
func unquote(b string, start, i int) (string, int, bool) {
	out := make([]byte, 0, len(b)-start)
	out = append(out, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return string(out), i + 1, true
		case c < ' ':
			return "", 0, false
		case c == '\\':
			if i+1 >= len(b) {
				return "", 0, false
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b, i+2)
				if r < 0 {
					return "", 0, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						r2 = hex4(b, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						i += 6
						r = dec
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", 0, false
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	return "", 0, false
}

// hex4 is the rune of the four hex digits at b[i:], or -1.
func hex4(b string, i int) rune {
	if i+4 > len(b) {
		return -1
	}
	var r rune
	for j := i; j < i+4; j++ {
		c := b[j]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
