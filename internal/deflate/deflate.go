// Package deflate compresses what crow-acp stores packed in its event log
// (streamed runs of frames, a load's own frames) and reads it back: one
// DEFLATE writer for the whole process, pooled readers, every read
// bounded, and the common-prefix and common-suffix measures the runs' and
// loads' columns are taken with.
package deflate

import (
	"bytes"
	"compress/flate"
	"errors"
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

// readers keeps DEFLATE readers for reuse: a rebuild reads thousands of
// packed records, and each new reader allocates its 32 KB window.
var readers sync.Pool

// firstRead is how much of a body Unpack inflates into a pooled buffer
// before it knows the body's size: most bodies (a turn's streamed frames)
// fit, and are inflated once.
const firstRead = 64 << 10

var firstBufs = sync.Pool{New: func() any { return new([firstRead]byte) }}

// ErrLimit says a body inflates to more than Unpack's limit.
var ErrLimit = errors.New("inflates to more than the limit")

// Unpack returns what packed inflates to, at most limit bytes: packed comes
// from a database, and a few KB of DEFLATE can claim gigabytes. Nothing of
// the body's size is allocated before its size is known to be within
// limit: a body larger than firstRead is inflated twice, first into a
// pooled buffer to measure it, then into a slice of exactly its size (a
// growing buffer would allocate about three times the body on the way).
func Unpack(packed []byte, limit int) ([]byte, error) {
	r, err := reader(packed)
	if err != nil {
		return nil, err
	}
	first := firstBufs.Get().(*[firstRead]byte)
	defer firstBufs.Put(first)
	size, err := inflatedSize(r, first[:], limit)
	readers.Put(r)
	switch {
	case err != nil:
		return nil, fmt.Errorf("packed body: %w", err)
	case size > limit:
		return nil, fmt.Errorf("packed body: %w of %d bytes", ErrLimit, limit)
	case size <= firstRead:
		return bytes.Clone(first[:size]), nil
	}
	if r, err = reader(packed); err != nil {
		return nil, err
	}
	defer readers.Put(r)
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("packed body: %w", err)
	}
	return out, nil
}

// reader is a pooled DEFLATE reader of packed.
func reader(packed []byte) (io.ReadCloser, error) {
	src := bytes.NewReader(packed)
	r, _ := readers.Get().(io.ReadCloser)
	if r == nil {
		return flate.NewReader(src), nil
	}
	if err := r.(flate.Resetter).Reset(src, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// inflatedSize reads r to its end, or until past limit, and returns how
// many bytes it gave: the first len(buf) of them are left in buf, the
// rest are read into buf and dropped.
func inflatedSize(r io.Reader, buf []byte, limit int) (int, error) {
	total := 0
	for total <= limit {
		dst := buf
		if total < len(buf) {
			dst = buf[total:]
		}
		n, err := r.Read(dst)
		total += n
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
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
