package persistence

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// framesPrefix starts the Body of a run of frames stored as the text once
// (PackFrames): a streamed reply's frames repeat one envelope around a few
// characters each, about a token a chunk from real providers, where even a
// DEFLATE-compressed envelope costs more than the text.
//
// After the prefix comes the DEFLATE of framesPlain's form: the envelope
// is stored once and the middles of a reply's chunks join into its text.
const framesPrefix = "\x00frames\n"

// PackFrames returns the Body of a run of outbound frames (frames joined by
// newlines) packed behind framesPrefix, or body itself when that is not
// smaller. Event.Frames gives the exact bytes back.
func PackFrames(body []byte) []byte {
	packed := deflate.Pack(framesPrefix, framesPlain(body))
	if packed == nil || len(packed) >= len(body) {
		return body
	}
	return packed
}

// framesRecordPrefix starts the Body of a run of frames packed against the
// record saved in the same transaction after it (PackWrite): the text a
// streamed run sent is the text that record saved, so it is stored once.
// After the prefix come the uvarint distance in seqs from the run's event
// to the record's (in the same stream) and then the DEFLATE of: the
// length of framesColumns' columns, the columns, and the middles as copies
// out of the record's JSON (Event.Record) and literals (encodeAgainst).
const framesRecordPrefix = "\x00frames+record\n"

// packFramesAgainst returns body packed against record, the indexed JSON
// of the projection event distance seqs after the run's, or nil if the
// writer fails.
func packFramesAgainst(body []byte, record *recordIndex, distance int64) []byte {
	cols, middles := framesColumns(body)
	plain := binary.AppendUvarint(nil, uint64(len(cols)))
	plain = append(append(plain, cols...), encodeAgainst(middles, record)...)
	return deflate.Pack(string(binary.AppendUvarint([]byte(framesRecordPrefix), uint64(distance))), plain)
}

// unpackFramesAgainst reads back what packFramesAgainst packed (packed:
// what follows the distance) with the same record.
func unpackFramesAgainst(packed, record []byte) ([][]byte, error) {
	plain, err := inflate(packed)
	if err != nil {
		return nil, err
	}
	n, k := binary.Uvarint(plain)
	if k <= 0 || n > uint64(len(plain)-k) {
		return nil, errors.New("packed frames: corrupt")
	}
	cols, rest := plain[k:k+int(n)], plain[k+int(n):]
	middles, err := decodeAgainst(rest, record, maxUnpacked)
	if err != nil {
		return nil, err
	}
	return decodeFramesPlain(append(cols[:len(cols):len(cols)], middles...))
}

// framesPlain is the uncompressed form of a packed run: its columns, then
// its middles (framesColumns).
func framesPlain(body []byte) []byte {
	cols, middles := framesColumns(body)
	return append(cols, middles...)
}

// framesColumns splits a run of frames into columns: the number of frames;
// for each frame, the length of its common prefix with the frame before
// it, of its common suffix with it, and of the part between (the middle),
// as three columns of uvarints; and the middles, concatenated.
func framesColumns(body []byte) (cols, middles []byte) {
	frames := bytes.Split(body, []byte("\n"))
	n := len(frames)
	cols = make([]byte, 0, 2*n+n+n+binary.MaxVarintLen64)
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
	size := 0
	for i, f := range frames {
		cols = binary.AppendUvarint(cols, uint64(len(f)-pre[i]-suf[i]))
		size += len(f) - pre[i] - suf[i]
	}
	middles = make([]byte, 0, size)
	for i, f := range frames {
		middles = append(middles, f[pre[i]:len(f)-suf[i]]...)
	}
	return cols, middles
}

// PackWrite returns the events one projection write stores, in order:
// pending (frames the journal buffered, Body as sent) and then records (the
// write's projection events, Body their JSON), each with its Body packed: a
// message record with long content with that text outside its JSON
// (packTextRecord), any other record as PackRecord packs it; a frame
// event against the dictionary (packFrame), or, an outbound one of
// MinPackedBody bytes or more, against the last record of its stream when
// the write has one (a streamed reply's run and the save after it hold the
// same text) or on its own (PackFrames), or, one such frame alone, against
// the dictionary, whichever is smallest; each only when that is smaller
// than the Body as sent. Packed events are copies:
// pending and records stay as they are (a failed write puts pending back in
// the journal's queue).
func PackWrite(pending, records []*Event) []*Event {
	out := make([]*Event, 0, len(pending)+len(records))
	last := make(map[string]int, 1) // stream -> index in records of its last record
	index := make([]*recordIndex, len(records))
	for i, r := range records {
		last[r.Stream] = i
	}
	for i, ev := range pending {
		if !ev.Kind.IsFrame() {
			out = append(out, ev)
			continue
		}
		packed := *ev
		if ev.Direction != DirOut || len(ev.Body) < MinPackedBody {
			if packed.Body = packFrame(ev); packed.Body == nil {
				packed.Body = ev.Body
			}
			out = append(out, &packed)
			continue
		}
		packed.Body = nil
		if r, ok := last[ev.Stream]; ok {
			distance := int64(0)
			for _, e := range pending[i+1:] {
				if e.Stream == ev.Stream {
					distance++
				}
			}
			for _, e := range records[:r+1] {
				if e.Stream == ev.Stream {
					distance++
				}
			}
			if index[r] == nil {
				index[r] = indexRecord(records[r].Body)
			}
			packed.Body = packFramesAgainst(ev.Body, index[r], distance)
		}
		if packed.Body == nil || len(packed.Body) >= len(ev.Body) {
			packed.Body = PackFrames(ev.Body)
		}
		// One frame (a tool call, a plan): its envelope is the
		// dictionary's. A run's repeats are what DEFLATE finds, and
		// encoding a long run against the dictionary too is wasted work.
		if bytes.IndexByte(ev.Body, '\n') < 0 {
			if small := packSmall(ev.Body); small != nil && len(small) < len(packed.Body) {
				packed.Body = small
			}
		}
		out = append(out, &packed)
	}
	for _, r := range records {
		packed := *r
		packed.Body = nil
		if r.Kind == EventMessageAppended || r.Kind == EventMessageUpdated {
			packed.Body = packTextRecord(r.Body)
		}
		if packed.Body == nil {
			packed.Body = PackRecord(r.Body)
		}
		out = append(out, &packed)
	}
	return out
}

// packFrame returns a frame event's Body against the dictionary when that
// is smaller, else nil. A received line that is not a JSON object (a
// client's malformed line) could start like a packed body, so one that
// starts with a NUL is always stored packed: no Body stored as it is then
// starts with a prefix, and every one reads back as it was.
func packFrame(ev *Event) []byte {
	if ev.Direction == DirIn && len(ev.Body) > 0 && ev.Body[0] == 0 {
		return packDict(ev.Body)
	}
	return packSmall(ev.Body)
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
	return decodeFramesPlain(plain)
}

// decodeFramesPlain decodes framesPlain's form.
func decodeFramesPlain(plain []byte) ([][]byte, error) {
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

// PackedAgainst reports whether e is a run of frames packed against the
// record saved after it (PackWrite), and that record's seq (0 when the body
// is damaged): FramesAt reads it with that record.
func (e *Event) PackedAgainst() (seq int64, ok bool) {
	seq, _, ok = e.packedAgainst()
	return seq, ok
}

// packedAgainst is PackedAgainst, and what of the body follows the
// distance.
func (e *Event) packedAgainst() (seq int64, packed []byte, ok bool) {
	rest, ok := bytes.CutPrefix(e.Body, []byte(framesRecordPrefix))
	if !ok || e.Direction != DirOut || !e.Kind.IsFrame() {
		return 0, nil, false
	}
	distance, k := binary.Uvarint(rest)
	if k <= 0 || distance == 0 || distance > math.MaxInt32 {
		return 0, nil, true // damaged: FramesAt says so
	}
	return e.Seq + int64(distance), rest[k:], true
}

// FramesAt returns the frames of evs[i], a frame event among a stream's
// events in seq order (Store.Events): those of Event.Frames, or for a run
// packed against the record saved after it (PackedAgainst), read back with
// that record, which must be among evs.
func FramesAt(evs []Event, i int) ([][]byte, error) {
	e := &evs[i]
	want, packed, ok := e.packedAgainst()
	switch {
	case !ok:
		return e.Frames(), nil
	case want == 0:
		return nil, fmt.Errorf("event %d: packed frames: corrupt", e.Seq)
	}
	j, found := slices.BinarySearchFunc(evs[i+1:], want, func(e Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	if !found {
		return nil, fmt.Errorf("event %d: its frames are packed against event %d, which is not among the events read", e.Seq, want)
	}
	record, err := evs[i+1+j].Record()
	if err != nil {
		return nil, fmt.Errorf("event %d: the record its frames are packed against: %w", e.Seq, err)
	}
	frames, err := unpackFramesAgainst(packed, record)
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", e.Seq, err)
	}
	return frames, nil
}
