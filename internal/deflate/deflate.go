// Package deflate compresses what crow-acp stores in its event log (frame
// runs, projection records, load records) and reads it back: one DEFLATE
// writer for the whole process (and one that packs against a dictionary),
// pooled readers, every read bounded, and the
// common-prefix and common-suffix measures the frame codecs take their
// differences with.
package deflate

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// writer is the one DEFLATE writer of the process, kept for its life: a
// writer holds ~1 MB of state, and a pool would drop it at every garbage
// collection and allocate it again. BestSpeed: a run's frames repeat one
// envelope, which the fast matcher finds as well as the default level does,
// at a quarter of the CPU, and it never touches the default level's 512 KB
// hash table.
var writer struct {
	sync.Mutex
	w *flate.Writer
}

// Pack returns prefix and then b DEFLATE-compressed, or nil if the writer
// fails.
func Pack(prefix string, b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/2 + len(prefix))
	buf.WriteString(prefix)
	writer.Lock()
	defer writer.Unlock()
	if writer.w == nil {
		writer.w, _ = flate.NewWriter(nil, flate.BestSpeed)
	}
	w := writer.w
	w.Reset(&buf)
	if _, err := w.Write(b); err != nil || w.Close() != nil {
		return nil
	}
	return buf.Bytes()
}

// dictWriter is the writer PackDict uses, kept like writer. Level 2: the
// fast matcher of BestSpeed indexes only some positions of what it has
// seen, so a dictionary's text would still cost ~20% of itself; level 2
// indexes all of it (4 KB against a 4 KB dictionary: 45 bytes instead of
// 895, at 55 µs instead of 35).
var dictWriter struct {
	sync.Mutex
	w *flate.Writer
}

// maxDict is the most of a dictionary DEFLATE can refer back to: its
// window.
const maxDict = 32 << 10

// PackDict is Pack with a preset dictionary: b's matches may refer back
// into dict (its last 32 KB), so text dict already holds costs a few bytes.
// UnpackDict with the same dict reads it back. The one writer cannot take
// a dictionary of its own (Reset keeps the one it was made with), so dict
// is written first and cut off at a sync flush: what follows is a DEFLATE
// stream whose history is dict, which is what a reader made with dict
// expects.
func PackDict(prefix string, dict, b []byte) []byte {
	dict = dict[max(0, len(dict)-maxDict):]
	var buf bytes.Buffer
	buf.Grow(len(dict)/2 + len(b)/2 + len(prefix))
	dictWriter.Lock()
	defer dictWriter.Unlock()
	if dictWriter.w == nil {
		dictWriter.w, _ = flate.NewWriter(nil, 2)
	}
	w := dictWriter.w
	w.Reset(&buf)
	if _, err := w.Write(dict); err != nil || w.Flush() != nil {
		return nil
	}
	cut := buf.Len()
	if _, err := w.Write(b); err != nil || w.Close() != nil {
		return nil
	}
	out := make([]byte, 0, len(prefix)+buf.Len()-cut)
	return append(append(out, prefix...), buf.Bytes()[cut:]...)
}

// readers keeps DEFLATE readers for reuse: a rebuild reads thousands of
// packed records, and each new reader allocates its 32 KB window.
var readers sync.Pool

// Unpack returns what packed inflates to, at most limit bytes: packed comes
// from a database, and a few KB of DEFLATE can claim gigabytes.
func Unpack(packed []byte, limit int) ([]byte, error) { return UnpackDict(packed, nil, limit) }

// UnpackDict reads back what PackDict packed with dict (at most limit
// bytes).
func UnpackDict(packed, dict []byte, limit int) ([]byte, error) {
	dict = dict[max(0, len(dict)-maxDict):]
	src := bytes.NewReader(packed)
	r, _ := readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(src, dict)
	} else if err := r.(flate.Resetter).Reset(src, dict); err != nil {
		return nil, err
	}
	defer readers.Put(r)
	var buf bytes.Buffer
	buf.Grow(min(4*len(packed), 1<<20, limit+1))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("packed body: %w", err)
	case n > int64(limit):
		return nil, fmt.Errorf("packed body: inflates to more than %d bytes", limit)
	}
	return buf.Bytes(), nil
}

// CommonPrefix is how many leading bytes a and b share.
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// CommonSuffix is how many trailing bytes a and b share.
func CommonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 1; i <= n; i++ {
		if a[len(a)-i] != b[len(b)-i] {
			return i - 1
		}
	}
	return n
}
