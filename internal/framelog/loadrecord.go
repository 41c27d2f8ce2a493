package framelog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"sync"

	"github.com/crow-acp/crow-acp/internal/deflate"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// A successful session/load is stored as one session_loaded event: the
// replay's tally, and the load's own frames (its request, its response and
// the updates sent right after it: available commands, context usage) in
// the event's "sent" field. An editor reopens threads often and each load
// sends the same ~2.5 KB again with a new request id, so the frames are
// stored as differences from the previous load of the session on the same
// connection (the "base", named by its checksum): a load costs a few
// hundred bytes. The first load of a connection is stored whole,
// DEFLATE-compressed. Frames reads them back byte for byte.

// replayTally counts the session/update frames a session/load sends before
// its response: the stored conversation shown again, not new traffic. The
// log keeps one session_loaded event saying what was replayed (frames,
// bytes, a CRC-32C of them, and the message range the agent names with
// Record), never the frames again: a reopened thread would otherwise grow
// the database by its whole conversation at every load.
type replayTally struct {
	frames int
	bytes  int64
	crc    uint32
	agent  map[string]any // what the agent recorded about the replay
}

// castagnoli is built on first use (a load's replay): the table takes
// a fraction of a millisecond that every start paid before initialize.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func (t *replayTally) add(frame []byte) {
	if t.frames > 0 {
		t.crc = crc32.Update(t.crc, castagnoli(), []byte{'\n'})
	}
	t.crc = crc32.Update(t.crc, castagnoli(), frame)
	t.frames++
	t.bytes += int64(len(frame))
}

// record is the replay's part of the session_loaded event.
func (t *replayTally) record() map[string]any {
	out := map[string]any{"frames": t.frames, "bytes": t.bytes, "crc32c": fmt.Sprintf("%08x", t.crc)}
	maps.Copy(out, t.agent)
	return out
}

// sentRecord is the "sent" field of a session_loaded event.
type sentRecord struct {
	Frames int    `json:"frames"`
	CRC32C string `json:"crc32c"`         // of the frames in their plain form (loadSum)
	Base   string `json:"base,omitempty"` // crc32c of the load the differences refer to
	Data   []byte `json:"data"`           // encodeLoad's output (base64 in the JSON)
}

// loadFrame is one frame of a load as it crossed the wire.
type loadFrame struct {
	dir  persistence.Direction
	body []byte
}

// The encoding of a load's frames, in order, each:
//
//	direction: 'i' (client to agent) or 'o'
//	'l' len body                           the frame as it is
//	'd' index prefix suffix len middle     base frame index with its bytes
//	                                       between prefix and suffix replaced
//
// numbers are unsigned varints. The whole may be DEFLATE-compressed
// behind a 'z'.
const (
	opLiteral = 'l'
	opDelta   = 'd'
	packedOps = 'z'
	// minDelta is the least a difference must share with its base to be
	// worth its four numbers.
	minDelta = 16
	// minPackedLoad is the smallest encoding worth compressing.
	minPackedLoad = 256
	// maxLoadBytes bounds what a load record decodes to: a load's own
	// frames are a few KB; a huge one means a damaged record.
	maxLoadBytes = 64 << 20
)

var errLoadRecord = errors.New("damaged load record")

// loadSum is the CRC-32C, in hex, of the plain form of a load's frames:
// each frame behind its direction letter, joined by newlines (a frame
// holds no raw newline).
func loadSum(frames []loadFrame) string {
	var crc uint32
	for i, f := range frames {
		if i > 0 {
			crc = crc32.Update(crc, castagnoli(), []byte{'\n'})
		}
		crc = crc32.Update(crc, castagnoli(), []byte{dirLetter(f.dir)})
		crc = crc32.Update(crc, castagnoli(), f.body)
	}
	return fmt.Sprintf("%08x", crc)
}

func dirLetter(d persistence.Direction) byte {
	if d == persistence.DirIn {
		return 'i'
	}
	return 'o'
}

// encodeLoad encodes frames, each as a difference from the base frame at
// the same position when that shares enough bytes with it.
func encodeLoad(frames, base []loadFrame) []byte {
	var out []byte
	for i, f := range frames {
		out = append(out, dirLetter(f.dir))
		if i < len(base) && base[i].dir == f.dir {
			b := base[i].body
			p := deflate.CommonPrefix(f.body, b)
			s := deflate.CommonSuffix(f.body[p:], b[p:])
			if p+s >= minDelta {
				out = append(out, opDelta)
				out = binary.AppendUvarint(out, uint64(i))
				out = binary.AppendUvarint(out, uint64(p))
				out = binary.AppendUvarint(out, uint64(s))
				mid := f.body[p : len(f.body)-s]
				out = binary.AppendUvarint(out, uint64(len(mid)))
				out = append(out, mid...)
				continue
			}
		}
		out = append(out, opLiteral)
		out = binary.AppendUvarint(out, uint64(len(f.body)))
		out = append(out, f.body...)
	}
	if len(out) < minPackedLoad {
		return out
	}
	packed := deflate.Pack(string(packedOps), out)
	if packed == nil || len(packed) >= len(out) {
		return out
	}
	return packed
}

// decodeLoad reverses encodeLoad against base, within budget.
func decodeLoad(data []byte, base []loadFrame, budget *persistence.Budget) ([]loadFrame, error) {
	if len(data) > 0 && data[0] == packedOps {
		plain, err := deflate.Unpack(data[1:], min(maxLoadBytes, budget.Left()))
		if err != nil {
			return nil, fmt.Errorf("%w: cannot inflate", errLoadRecord)
		}
		// The inflated record is the read's memory too, as a packed run's is.
		if err := budget.Take(len(plain)); err != nil {
			return nil, fmt.Errorf("%w: %w", errLoadRecord, err)
		}
		data = plain
	}
	var out []loadFrame
	total := 0
	truncated := false // a number or bytes past the end: the rest reads as zero
	num := func() int {
		v, n := binary.Uvarint(data)
		if n <= 0 || v > maxLoadBytes {
			truncated = true
			return 0
		}
		data = data[n:]
		return int(v)
	}
	take := func(n int) []byte {
		if n > len(data) {
			truncated = true
			return nil
		}
		b := data[:n]
		data = data[n:]
		return b
	}
	for len(data) > 0 {
		if len(data) < 2 || (data[0] != 'i' && data[0] != 'o') {
			return nil, fmt.Errorf("%w: frame %d: bad header", errLoadRecord, len(out))
		}
		f := loadFrame{dir: persistence.DirOut}
		if data[0] == 'i' {
			f.dir = persistence.DirIn
		}
		op := data[1]
		data = data[2:]
		switch op {
		case opLiteral:
			f.body = bytes.Clone(take(num()))
		case opDelta:
			i, p, s, n := num(), num(), num(), num()
			if !truncated && (i >= len(base) || p+s > len(base[i].body)) {
				return nil, fmt.Errorf("%w: frame %d: refers past its base", errLoadRecord, len(out))
			}
			if mid := take(n); !truncated {
				b := base[i].body
				f.body = make([]byte, 0, p+n+s)
				f.body = append(append(append(f.body, b[:p]...), mid...), b[len(b)-s:]...)
			}
		default:
			return nil, fmt.Errorf("%w: frame %d: unknown op %q", errLoadRecord, len(out), op)
		}
		if truncated {
			return nil, fmt.Errorf("%w: frame %d: truncated", errLoadRecord, len(out))
		}
		if total += len(f.body); total > maxLoadBytes {
			return nil, fmt.Errorf("%w: too large", errLoadRecord)
		}
		if err := budget.Take(len(f.body)); err != nil {
			return nil, fmt.Errorf("%w: %w", errLoadRecord, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Frame is one frame of a stream's log, byte for byte as it crossed the
// wire (secrets masked as the frame log stores them).
type Frame struct {
	Seq       int64 // of the event that holds it
	Direction persistence.Direction
	Body      []byte
}

// Frames returns the frames recorded in evs, a stream's events in seq
// order from its first (a load's frames may be stored as differences from
// an earlier load's): the frames of frame events and of session/load
// requests, responses and the updates after them kept in session_loaded
// events, all decoded within one persistence.Budget of
// persistence.MaxDecoded bytes. A replay is never among them: its
// session_loaded event says what it sent (frames, bytes, CRC-32C).
func Frames(evs []persistence.Event) ([]Frame, error) {
	return framesWithin(evs, persistence.NewBudget(persistence.MaxDecoded))
}

// framesWithin is Frames within budget.
func framesWithin(evs []persistence.Event, budget *persistence.Budget) ([]Frame, error) {
	var out []Frame
	loads := make(map[string][]loadFrame) // by the crc32c of their plain form
	for _, e := range evs {
		switch {
		case e.Kind.IsFrame():
			frames, err := e.Frames(budget)
			if err != nil {
				return out, err
			}
			for _, f := range frames {
				out = append(out, Frame{Seq: e.Seq, Direction: e.Direction, Body: f})
			}
		case e.Kind == persistence.EventSessionLoaded:
			frames, err := loadedFrames(&e, loads, budget)
			if err != nil {
				return out, fmt.Errorf("event %d: %w", e.Seq, err)
			}
			for _, f := range frames {
				out = append(out, Frame{Seq: e.Seq, Direction: f.dir, Body: f.body})
			}
		}
	}
	return out, nil
}

// loadedFrames decodes the frames a session_loaded event holds (none if it
// was recorded before loads kept their frames here) and adds them to loads,
// the earlier loads of the stream, under the key later loads name them by.
func loadedFrames(e *persistence.Event, loads map[string][]loadFrame, budget *persistence.Budget) ([]loadFrame, error) {
	var rec struct {
		Sent *sentRecord `json:"sent"`
	}
	if err := json.Unmarshal(e.Body, &rec); err != nil {
		return nil, fmt.Errorf("%w: %v", errLoadRecord, err)
	}
	if rec.Sent == nil {
		return nil, nil
	}
	var base []loadFrame
	if rec.Sent.Base != "" {
		var ok bool
		if base, ok = loads[rec.Sent.Base]; !ok {
			return nil, fmt.Errorf("%w: its base load %s is not among the events before it", errLoadRecord, rec.Sent.Base)
		}
	}
	frames, err := decodeLoad(rec.Sent.Data, base, budget)
	if err != nil {
		return nil, err
	}
	key := loadSum(frames)
	if len(frames) != rec.Sent.Frames || key != rec.Sent.CRC32C {
		return nil, fmt.Errorf("%w: %d frames, crc32c %s; the record says %d, %s", errLoadRecord, len(frames), key, rec.Sent.Frames, rec.Sent.CRC32C)
	}
	loads[key] = frames
	return frames, nil
}
