package framelog

import (
	"bytes"
	"encoding/json"
)

// Streamed text is one session/update frame per model token, all written by
// acp's text-chunk fast path with a fixed prefix. Parsing each with
// encoding/json cost ~10 µs on the write path; reading the session id after
// the known prefix gives the same attribution for a fraction of that.
var sessionUpdatePrefix = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`)

// sessionUpdateSession returns the sessionId of a session/update
// notification that starts with the canonical prefix, or false when the
// frame must be parsed in full (other frames, or ids with escapes). ours
// says the frame is one crow-acp wrote: its encoder only writes valid JSON,
// so the validity scan (~1.3 µs, a quarter of a streamed token's cost) is
// left to frames from the client.
func sessionUpdateSession(raw []byte, ours bool) (string, bool) {
	rest, ok := bytes.CutPrefix(raw, sessionUpdatePrefix)
	if !ok {
		return "", false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	// The params object must go on with more members and the frame must be
	// one JSON value; anything else takes the full parse.
	if !bytes.HasPrefix(rest[end+1:], []byte(`,"update":`)) || (!ours && !json.Valid(raw)) {
		return "", false
	}
	return string(rest[:end]), true
}
