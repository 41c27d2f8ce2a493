package secret

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MaskMCPServers returns a frame with the values of every MCP server's env
// variables and HTTP headers (params.mcpServers[].env[].value,
// .headers[].value) replaced by Mask; everything else, order included, is
// kept byte for byte. A frame without them is returned as is.
//
// The frame is untrusted and is read as the agent's decoder reads it, and
// then some: every occurrence of a duplicated key (encoding/json keeps the
// last, other readers the first), keys compared with Unicode case folding
// as encoding/json does ("MCPServers", "mcpſervers"), any JSON value of the
// line (a second object after the first, whatever its method or lack of
// one), and inside env and headers every scalar except a name. Where the
// bytes stop being JSON, the rest of the frame is replaced by Mask: when
// in doubt, mask.
func MaskMCPServers(frame []byte) []byte {
	if !mayNameMCPServers(frame) {
		return frame
	}
	spans, tail := secretSpans(frame)
	if len(spans) == 0 && tail < 0 {
		return frame
	}
	out := make([]byte, 0, len(frame))
	last := 0
	for _, s := range spans {
		out = append(out, frame[last:s.start]...)
		out = append(out, maskedJSON...)
		last = s.end
	}
	if tail < 0 {
		return append(out, frame[last:]...)
	}
	out = append(out, frame[last:tail]...)
	return append(out, Mask...)
}

// maskedJSON is Mask as a JSON string.
var maskedJSON = []byte(`"` + Mask + `"`)

// mayNameMCPServers reports whether a key of frame could decode to
// "mcpServers". Its first three letters fold to nothing but ASCII (only
// k and s have non-ASCII folds), so a frame without "mcp" in any case and
// without a \u escape (which could spell it) has no such key.
func mayNameMCPServers(frame []byte) bool {
	if bytes.Contains(frame, []byte(`\u`)) {
		return true
	}
	for i := 0; i+2 < len(frame); i++ {
		if frame[i]|0x20 == 'm' && frame[i+1]|0x20 == 'c' && frame[i+2]|0x20 == 'p' {
			return true
		}
	}
	return false
}

// span is the bytes of one JSON scalar to replace.
type span struct{ start, end int }

// Depth of a value below the keys that make it secret.
const (
	plain     = iota
	inServers // below a key "mcpServers"
	inSecrets // below "env" or "headers" below "mcpServers"
)

// container is an object or array being read.
type container struct {
	object  bool
	wantKey bool   // an object's next token is a key (or its end)
	key     string // an object's current key
	level   int
}

// secretSpans walks every JSON value in frame and returns the scalars to
// mask, in order, and the offset from which the bytes are not JSON (-1
// when all of them are).
func secretSpans(frame []byte) ([]span, int) {
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	var spans []span
	var stack []container
	good := 0 // the end of the last token read
	for {
		tok, err := dec.Token()
		if err != nil {
			if len(bytes.TrimSpace(frame[good:])) == 0 {
				return spans, -1
			}
			return spans, good
		}
		prev := good
		good = int(dec.InputOffset())
		var top *container
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if key, ok := tok.(string); ok {
				top.key, top.wantKey = key, false
				continue
			}
			stack = stack[:len(stack)-1] // the object's '}'
			afterValue(stack)
			continue
		}
		level, directName := plain, false
		if top != nil {
			level = top.level
			if top.object {
				level = deeper(level, top.key)
				directName = strings.EqualFold(top.key, "name")
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, container{object: t == '{', wantKey: t == '{', level: level})
				continue
			}
			stack = stack[:len(stack)-1] // an array's ']'
		case string:
			if level == inSecrets && !directName && t != "" && t != Mask {
				spans = append(spans, span{valueStart(frame, prev), good})
			}
		case json.Number:
			if level == inSecrets && !directName {
				spans = append(spans, span{valueStart(frame, prev), good})
			}
		}
		afterValue(stack)
	}
}

// afterValue notes that a value of the innermost container was read.
func afterValue(stack []container) {
	if len(stack) > 0 && stack[len(stack)-1].object {
		stack[len(stack)-1].wantKey = true
	}
}

// deeper is the level of the value of key in a container at level.
func deeper(level int, key string) int {
	switch {
	case level == plain && strings.EqualFold(key, "mcpServers"):
		return inServers
	case level == inServers && (strings.EqualFold(key, "env") || strings.EqualFold(key, "headers")):
		return inSecrets
	}
	return level
}

// valueStart is where the scalar read after offset from begins: past the
// whitespace and the ':' or ',' before it.
func valueStart(frame []byte, from int) int {
	for from < len(frame) && strings.IndexByte(" \t\r\n:,", frame[from]) >= 0 {
		from++
	}
	return from
}
