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

// ErrLimit says a body inflates to more than Unpack's limit.
var ErrLimit = errors.New("inflates to more than the limit")

// Unpack returns what packed inflates to, at most limit bytes: packed comes
// from a database, and a few KB of DEFLATE can claim gigabytes.
func Unpack(packed []byte, limit int) ([]byte, error) {
	src := bytes.NewReader(packed)
	r, _ := readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(src)
	} else if err := r.(flate.Resetter).Reset(src, nil); err != nil {
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
		return nil, fmt.Errorf("packed body: %w of %d bytes", ErrLimit, limit)
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
