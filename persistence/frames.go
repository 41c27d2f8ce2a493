package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// framesPrefix starts the Body of a run of frames stored as the text once
// (PackFrames): a streamed reply's frames repeat one envelope around a few
// characters each, about a token a chunk from real providers, where even a
// DEFLATE-compressed envelope costs more than the text.
//
// After the prefix comes the DEFLATE of: the number of frames; for each
// frame, the length of its common prefix with the frame before it, of its
// common suffix with it, and of the part between (the middle), as three
// columns of uvarints; then the middles, concatenated. The envelope is
// thus stored once and the middles of a reply's chunks join into its text.
const framesPrefix = "\x00frames\n"

// PackFrames returns the Body of a run of outbound frames (frames joined by
// newlines) packed behind framesPrefix, or body itself when that is not
// smaller. Event.Frames gives the exact bytes back.
func PackFrames(body []byte) []byte {
	frames := bytes.Split(body, []byte("\n"))
	n := len(frames)
	cols := make([]byte, 0, 2*n+n+n+binary.MaxVarintLen64)
	cols = binary.AppendUvarint(cols, uint64(n))
	pre, suf := make([]int, n), make([]int, n)
	var prev []byte
	for i, f := range frames {
		p, s := deflate.CommonPrefix(prev, f), 0
		if i >= 2 {
			// Keep to the envelope: a chunk that starts like the one
			// before it would otherwise lend it a character, and the
			// middles would no longer join into the text.
			p = min(p, pre[i-1])
		}
		s = deflate.CommonSuffix(prev[p:], f[p:])
		if i >= 2 {
			s = min(s, suf[i-1])
		}
		pre[i], suf[i] = p, s
		prev = f
	}
	for _, p := range pre {
		cols = binary.AppendUvarint(cols, uint64(p))
	}
	for _, s := range suf {
		cols = binary.AppendUvarint(cols, uint64(s))
	}
	size := len(cols)
	for i, f := range frames {
		cols = binary.AppendUvarint(cols, uint64(len(f)-pre[i]-suf[i]))
		size += len(f) - pre[i] - suf[i]
	}
	plain := make([]byte, 0, size)
	plain = append(plain, cols...)
	for i, f := range frames {
		plain = append(plain, f[pre[i]:len(f)-suf[i]]...)
	}
	packed := deflate.Pack(framesPrefix, plain)
	if packed == nil || len(packed) >= len(body) {
		return body
	}
	return packed
}

// maxPackedFrames bounds the frames of one packed run (a run's body is at
// most 256 KB of frames of 30 bytes or more).
const maxPackedFrames = 1 << 20

// unpackFrames gives back the frames of a body packed by PackFrames,
// checking every length against what it has: the body comes from a
// database.
func unpackFrames(packed []byte) ([][]byte, error) {
	plain, err := inflate(packed)
	if err != nil {
		return nil, err
	}
	bad := errors.New("packed frames: corrupt")
	n, k := binary.Uvarint(plain)
	if k <= 0 || n > uint64(len(plain)/3) || n > maxPackedFrames {
		return nil, bad // each frame takes three uvarints
	}
	plain = plain[k:]
	nums := make([]uint64, 3*n)
	for i := range nums {
		v, k := binary.Uvarint(plain)
		if k <= 0 {
			return nil, bad
		}
		nums[i], plain = v, plain[k:]
	}
	pre, suf, mid := nums[:n], nums[n:2*n], nums[2*n:]
	frames := make([][]byte, n)
	var prev []byte
	total := 0
	for i := range frames {
		p, s, m := pre[i], suf[i], mid[i]
		if p > uint64(len(prev)) || s > uint64(len(prev))-p || m > uint64(len(plain)) {
			return nil, bad
		}
		size := int(p) + int(m) + int(s)
		if total += size + 1; total > maxUnpacked {
			return nil, fmt.Errorf("packed frames: more than %d bytes", maxUnpacked)
		}
		f := make([]byte, 0, size)
		f = append(f, prev[:p]...)
		f = append(f, plain[:m]...)
		f = append(f, prev[len(prev)-int(s):]...)
		plain = plain[m:]
		frames[i], prev = f, f
	}
	if len(plain) != 0 {
		return nil, bad
	}
	return frames, nil
}
