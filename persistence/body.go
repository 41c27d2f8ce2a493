package persistence

import (
	"bytes"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// packedPrefix starts a Body stored DEFLATE-compressed: a run of frames
// (PackFrames) or a projection event's record (PackRecord). Every frame and
// record crow-acp writes starts with '{', so none starts with it.
const packedPrefix = "\x00deflate\n"

// MinPackedBody is the smallest body stored compressed: below it, packing
// saves too little to matter.
const MinPackedBody = 256

// maxUnpacked bounds what one packed body inflates to: the bodies come from
// a database, and a few KB of DEFLATE can claim gigabytes. A variable for
// tests.
var maxUnpacked = 1 << 30

// pack returns body DEFLATE-compressed behind packedPrefix, or body itself
// when that is not smaller.
func pack(body []byte) []byte {
	packed := deflate.Pack(packedPrefix, body)
	if packed == nil || len(packed) >= len(body) {
		return body
	}
	return packed
}

// unpack inflates body if it starts with packedPrefix (ok), else returns it
// as it is.
func unpack(body []byte) (out []byte, ok bool, err error) {
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
// record itself, or, from MinPackedBody bytes on, the record
// DEFLATE-compressed when that is smaller. Event.Record gives it back.
func PackRecord(record []byte) []byte {
	if len(record) < MinPackedBody {
		return record
	}
	return pack(record)
}

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
