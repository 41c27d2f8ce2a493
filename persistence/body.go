package persistence

import (
	"bytes"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// packedPrefix starts a Body stored DEFLATE-compressed: a run of frames
// (PackFrames) or a projection event's record (PackRecord). Every frame and
// record crow-acp writes starts with '{', so none starts with it (a line a
// client sent that does not is stored packed: PackWrite).
const packedPrefix = "\x00deflate\n"

// MinPackedBody is the smallest body stored DEFLATE-compressed: below it,
// DEFLATE saves too little to matter (the dictionary does: packDict).
const MinPackedBody = 256

// maxUnpacked bounds what one packed body inflates to: the bodies come from
// a database, and a few KB of DEFLATE can claim gigabytes. A variable for
// tests.
var maxUnpacked = 1 << 30

// pack returns body compressed, whichever is smallest: against the
// dictionary (packDict, from minDictBody bytes) or DEFLATE-compressed
// behind packedPrefix (from MinPackedBody bytes, where it finds the
// repeats within the body); or body itself when neither is smaller.
func pack(body []byte) []byte {
	best := body
	if p := packSmall(body); p != nil {
		best = p
	}
	if len(body) >= MinPackedBody {
		if p := deflate.Pack(packedPrefix, body); p != nil && len(p) < len(best) {
			best = p
		}
	}
	return best
}

// unpack gives back body as it was if it was stored packed (ok: it starts
// with packedPrefix or dictPrefix), else returns it as it is.
func unpack(body []byte) (out []byte, ok bool, err error) {
	if packed, ok := bytes.CutPrefix(body, []byte(dictPrefix)); ok {
		out, err = unpackDict(packed)
		return out, true, err
	}
	packed, ok := bytes.CutPrefix(body, []byte(packedPrefix))
	if !ok {
		return body, false, nil
	}
	out, err = inflate(packed)
	return out, true, err
}

// inflate returns what packed inflates to, at most maxUnpacked bytes.
func inflate(packed []byte) ([]byte, error) { return deflate.Unpack(packed, maxUnpacked) }

// PackRecord is the Body stored for a projection event's JSON record: the
// record itself, or the record compressed when that is smaller (pack).
// Event.Record gives it back.
func PackRecord(record []byte) []byte { return pack(record) }

// Record returns the JSON of a lifecycle or projection event: its Body,
// inflated when it was stored packed (PackRecord), with its content put
// back when it was stored outside the JSON (packTextRecord). Every reader of those
// bodies goes through it; for frame kinds use Frames.
func (e *Event) Record() ([]byte, error) {
	if e.Kind.IsFrame() {
		return nil, fmt.Errorf("event %d is a %s frame, not a record", e.Seq, e.Kind)
	}
	if r, ok, err := splitTextRecord(e.Body); ok {
		var b []byte
		if err == nil {
			b, err = r.json()
		}
		if err != nil {
			return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, err)
		}
		return b, nil
	}
	b, _, err := unpack(e.Body)
	if err != nil {
		return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, err)
	}
	return b, nil
}
