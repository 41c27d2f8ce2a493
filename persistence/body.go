package persistence

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
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

// packer is the one DEFLATE writer of the process, kept for its life: a
// writer holds ~1 MB of state, and a pool would drop it at every garbage
// collection and allocate it again. BestSpeed: a run's frames repeat one
// envelope, which the fast matcher finds as well as the default level does,
// at a quarter of the CPU, and it never touches the default level's 512 KB
// hash table.
var packer struct {
	sync.Mutex
	w *flate.Writer
}

// pack returns body DEFLATE-compressed behind packedPrefix, or body itself
// when that is not smaller.
func pack(body []byte) []byte {
	packed := deflate(packedPrefix, body)
	if packed == nil || len(packed) >= len(body) {
		return body
	}
	return packed
}

// deflate returns prefix and then b DEFLATE-compressed, or nil if the
// writer fails.
func deflate(prefix string, b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/2 + len(prefix))
	buf.WriteString(prefix)
	packer.Lock()
	defer packer.Unlock()
	if packer.w == nil {
		packer.w, _ = flate.NewWriter(nil, flate.BestSpeed)
	}
	w := packer.w
	w.Reset(&buf)
	if _, err := w.Write(b); err != nil || w.Close() != nil {
		return nil
	}
	return buf.Bytes()
}

// inflaters keeps DEFLATE readers for reuse: a rebuild reads thousands of
// packed records, and each new reader allocates its 32 KB window.
var inflaters sync.Pool

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
func inflate(packed []byte) ([]byte, error) {
	src := bytes.NewReader(packed)
	r, _ := inflaters.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(src)
	} else if err := r.(flate.Resetter).Reset(src, nil); err != nil {
		return nil, err
	}
	defer inflaters.Put(r)
	var buf bytes.Buffer
	buf.Grow(min(4*len(packed), 1<<20))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(maxUnpacked)+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("packed body: %w", err)
	case n > int64(maxUnpacked):
		return nil, fmt.Errorf("packed body: inflates to more than %d bytes", maxUnpacked)
	}
	return buf.Bytes(), nil
}

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
// inflated when it was stored packed (PackRecord). Every reader of those
// bodies goes through it; for frame kinds use Frames.
func (e *Event) Record() ([]byte, error) {
	if e.Kind.IsFrame() {
		return nil, fmt.Errorf("event %d is a %s frame, not a record", e.Seq, e.Kind)
	}
	b, _, err := unpack(e.Body)
	if err != nil {
		return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, err)
	}
	return b, nil
}
