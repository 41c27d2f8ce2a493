package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// A frame event's Body is its frame exactly as it crossed the wire, or,
// for a run of outbound frames (a turn's streamed updates), the frames
// joined by newlines (a JSON-RPC frame holds no raw newline). Every other
// event's Body is its JSON record. There is one other stored form, for
// outbound frame events only (every frame crow-acp sends starts with '{',
// so none starts with the prefix; a received line is always stored as it
// came):
//
//	packedPrefix, then DEFLATE of either
//	  0x00 and the run's columns (packRun), written for runs of frames, or
//	  the frames joined by newlines, as crow-acp 0.1.0 wrote them.
//
// A streamed reply sends the same envelope around about a token a chunk:
// stored as it is, the envelope is 30 times the text. The columns keep it
// once; what varies is the text, which DEFLATE then shortens.
const packedPrefix = "\x00deflate\n"

// columnsMark starts a packed run's columns (a frame starts with '{').
const columnsMark = 0

// MaxDecoded is how many bytes one read of a stream's frames may decode
// (Budget): a damaged or hostile body of a few KB can claim gigabytes.
// A 1,000-turn session's streamed frames decode to about 230 MB.
const MaxDecoded = 1 << 30

// Budget is what is left to decode in one read: every packed body of the
// read takes from the same budget, so many large bodies cannot add up to
// more than one.
type Budget struct{ left, size int }

// NewBudget returns a budget of n bytes (MaxDecoded for a whole stream).
func NewBudget(n int) *Budget { return &Budget{left: n, size: n} }

// errBudget says a read decoded more than its budget allows.
var errBudget = errors.New("decodes to more than the read's budget")

// Left is how many bytes b has left.
func (b *Budget) Left() int { return b.left }

// Take consumes n bytes of b, or fails if fewer are left.
func (b *Budget) Take(n int) error {
	if n < 0 || n > b.left {
		return fmt.Errorf("%w of %d bytes", errBudget, b.size)
	}
	b.left -= n
	return nil
}

// PackRun returns the Body stored for a run of outbound frames (frames
// joined by newlines): packed (packedPrefix) when the run holds more than
// one frame and packing makes it smaller, else the body itself. A single
// frame is always stored as it is. Event.Frames gives the exact bytes back.
func PackRun(body []byte) []byte {
	if bytes.IndexByte(body, '\n') < 0 {
		return body
	}
	cols, middles := runColumns(body)
	plain := append(append([]byte{columnsMark}, cols...), middles...)
	packed := deflate.Pack(packedPrefix, plain)
	if packed == nil || len(packed) >= len(body) {
		return body
	}
	return packed
}

// runColumns splits a run of frames into columns: the number of frames;
// for each frame the length of its common prefix with the frame before it,
// then of its common suffix, then of the part between (the middle), as
// three columns of uvarints; and the middles, joined. A streamed reply's
// middles joined are its text.
func runColumns(body []byte) (cols, middles []byte) {
	frames := bytes.Split(body, []byte("\n"))
	n := len(frames)
	pre, suf := make([]int, n), make([]int, n)
	var prev []byte
	size := 0
	for i, f := range frames {
		p := deflate.CommonPrefix(prev, f)
		if i >= 2 {
			// Keep to the envelope: a chunk that starts like the one
			// before it would otherwise lend it a character, and the
			// middles would no longer join into the text.
			p = min(p, pre[i-1])
		}
		s := deflate.CommonSuffix(prev[p:], f[p:])
		if i >= 2 {
			s = min(s, suf[i-1])
		}
		pre[i], suf[i], prev = p, s, f
		size += len(f) - p - s
	}
	cols = binary.AppendUvarint(make([]byte, 0, 4*n+binary.MaxVarintLen64), uint64(n))
	for _, p := range pre {
		cols = binary.AppendUvarint(cols, uint64(p))
	}
	for _, s := range suf {
		cols = binary.AppendUvarint(cols, uint64(s))
	}
	middles = make([]byte, 0, size)
	for i, f := range frames {
		cols = binary.AppendUvarint(cols, uint64(len(f)-pre[i]-suf[i]))
		middles = append(middles, f[pre[i]:len(f)-suf[i]]...)
	}
	return cols, middles
}

// errCorrupt says a packed body does not decode.
var errCorrupt = errors.New("packed frames: corrupt")

// decodeRun reverses runColumns, taking every frame it rebuilds from b:
// plain comes from a database, so every length is checked against what
// is there and what b allows before anything is allocated.
func decodeRun(plain []byte, b *Budget) ([][]byte, error) {
	n, k := binary.Uvarint(plain)
	if k <= 0 || n == 0 || n > uint64(len(plain)/3) {
		return nil, errCorrupt // each frame takes three uvarints
	}
	// Three numbers and a slice per frame, taken before they are made
	// (n is at most a third of plain, which b holds already).
	if err := b.Take(int(n) * FrameCost); err != nil {
		return nil, err
	}
	plain = plain[k:]
	nums := make([]int, 3*n)
	for i := range nums {
		v, k := binary.Uvarint(plain)
		if k <= 0 || v > uint64(len(plain)) && i >= 2*int(n) {
			return nil, errCorrupt // a middle is longer than what is left
		}
		if v > MaxDecoded {
			return nil, errCorrupt
		}
		nums[i], plain = int(v), plain[k:]
	}
	pre, suf, mid := nums[:n], nums[n:2*n], nums[2*n:]
	frames := make([][]byte, n)
	var prev []byte
	for i := range frames {
		p, s, m := pre[i], suf[i], mid[i]
		if p > len(prev) || s > len(prev)-p || m > len(plain) {
			return nil, errCorrupt
		}
		if err := b.Take(p + m + s); err != nil {
			return nil, err
		}
		f := make([]byte, 0, p+m+s)
		f = append(append(append(f, prev[:p]...), plain[:m]...), prev[len(prev)-s:]...)
		plain = plain[m:]
		frames[i], prev = f, f
	}
	if len(plain) != 0 {
		return nil, errCorrupt
	}
	return frames, nil
}

// Frames returns the frames a frame event holds, in order (one, or a run
// of streamed updates), byte for byte as they crossed the wire, decoding a
// packed body within b (one Budget for a whole read). A body that does not
// decode is an error naming the event. Other kinds hold no frames: nil.
func (e *Event) Frames(b *Budget) ([][]byte, error) {
	if !e.Kind.IsFrame() {
		return nil, nil
	}
	var frames [][]byte
	var err error
	if packed, ok := bytes.CutPrefix(e.Body, []byte(packedPrefix)); ok && e.Direction == DirOut {
		frames, err = unpackRun(packed, b)
	} else {
		frames, err = splitFrames(e.Body, b)
	}
	if err != nil {
		return nil, fmt.Errorf("event %d (%s %s): %w", e.Seq, e.Kind, e.Method, err)
	}
	return frames, nil
}

// FrameCost is what a frame costs a read beyond its bytes (its slice, and
// the reader's record of it), taken from the budget for every frame before
// any is made: a body of a million empty lines must not cost 70 times its
// size.
const FrameCost = 64

// splitFrames is body's frames, joined by newlines, within b.
func splitFrames(body []byte, b *Budget) ([][]byte, error) {
	if err := b.Take((bytes.Count(body, []byte("\n")) + 1) * FrameCost); err != nil {
		return nil, err
	}
	return bytes.Split(body, []byte("\n")), nil
}

// unpackRun decodes a packed body (after packedPrefix) within b: what it
// inflates to is taken from b before it is allocated (deflate.Unpack
// measures it first), then its frames.
func unpackRun(packed []byte, b *Budget) ([][]byte, error) {
	plain, err := deflate.Unpack(packed, b.left)
	if err != nil {
		if errors.Is(err, deflate.ErrLimit) {
			return nil, fmt.Errorf("packed frames: %w of %d bytes", errBudget, b.size)
		}
		return nil, fmt.Errorf("packed frames: %w", err)
	}
	if err := b.Take(len(plain)); err != nil {
		return nil, err
	}
	if len(plain) > 0 && plain[0] == columnsMark {
		return decodeRun(plain[1:], b)
	}
	// As 0.1.0 packed: the body itself.
	return splitFrames(plain, b)
}

// PackEvents returns evs as a store keeps them: each outbound run of
// frames packed (PackRun) in a copy, every other event, and a body packed
// already (a copy between stores), as it is. evs stay as they are (a
// failed write puts them back in the frame log's queue).
func PackEvents(evs []*Event) []*Event {
	out := make([]*Event, len(evs))
	for i, e := range evs {
		out[i] = e
		if e.Kind.IsFrame() && e.Direction == DirOut && !bytes.HasPrefix(e.Body, []byte(packedPrefix)) {
			if b := PackRun(e.Body); len(b) != len(e.Body) {
				packed := *e
				packed.Body = b
				out[i] = &packed
			}
		}
	}
	return out
}
