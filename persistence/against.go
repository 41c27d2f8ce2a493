package persistence

import (
	"encoding/binary"
	"errors"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// A run of frames committed with the save of the reply it streams holds
// that save's text: its middles, joined, are (nearly always) a stretch of
// the record's JSON, escaped the same way. encodeAgainst stores them as
// copies out of the record where they match and literal bytes where they
// do not: the text once, the rest as offsets. (A DEFLATE preset dictionary
// would do the same, but Go's fast level indexes too little of a
// dictionary to use it, and the next level keeps ~1 MB of state resident.)

// minCopy is the shortest match stored as a copy: a copy's three uvarints
// take about as much. Matches are found by their first minCopy bytes.
const minCopy = 8

// recordIndex finds where in a record a run of bytes starts: a table of
// the record's minCopy-byte grams by hash (the last position of each), as
// LZ4 keeps one. Built once per record, it makes matching a run linear.
type recordIndex struct {
	r     []byte
	table []int32 // position+1; 0: none
}

const indexBits = 14

func gramHash(b []byte) uint32 {
	return uint32(binary.LittleEndian.Uint64(b) * 0x9E3779B185EBCA87 >> (64 - indexBits))
}

func indexRecord(r []byte) *recordIndex {
	x := &recordIndex{r: r, table: make([]int32, 1<<indexBits)}
	for i := 0; i+minCopy <= len(r) && i < 1<<31-1; i++ {
		x.table[gramHash(r[i:])] = int32(i + 1)
	}
	return x
}

// find returns where in the record a match of at least minCopy bytes with
// b starts, and its length, or 0, 0.
func (x *recordIndex) find(b []byte) (at, n int) {
	if len(b) < minCopy {
		return 0, 0
	}
	p := int(x.table[gramHash(b)]) - 1
	if p < 0 {
		return 0, 0
	}
	if n = deflate.CommonPrefix(x.r[p:], b); n < minCopy {
		return 0, 0
	}
	return p, n
}

// encodeAgainst returns m as copies out of the indexed record and
// literals: the number of segments; per segment its literal length, its
// copy length and, for a copy, the copy's offset in the record (three
// columns of uvarints, the offsets only of copies); then the literals,
// concatenated.
func encodeAgainst(m []byte, x *recordIndex) []byte {
	r := x.r
	var lits, copies, offs []int
	var literal []byte
	pos, next, litStart := 0, 0, 0
	for pos < len(m) {
		at, n := next, 0
		if next < len(r) {
			n = deflate.CommonPrefix(r[next:], m[pos:])
		}
		if n < minCopy {
			at, n = x.find(m[pos:])
		}
		if n < minCopy {
			pos++
			continue
		}
		lits, copies, offs = append(lits, pos-litStart), append(copies, n), append(offs, at)
		literal = append(literal, m[litStart:pos]...)
		pos += n
		litStart, next = pos, at+n
	}
	if litStart < len(m) || len(lits) == 0 {
		lits, copies = append(lits, len(m)-litStart), append(copies, 0)
		literal = append(literal, m[litStart:]...)
	}
	out := binary.AppendUvarint(make([]byte, 0, 4*len(lits)+len(literal)+binary.MaxVarintLen64), uint64(len(lits)))
	for _, v := range lits {
		out = binary.AppendUvarint(out, uint64(v))
	}
	for _, v := range copies {
		out = binary.AppendUvarint(out, uint64(v))
	}
	for _, v := range offs {
		out = binary.AppendUvarint(out, uint64(v))
	}
	return append(out, literal...)
}

var errAgainst = errors.New("packed frames: corrupt copies")

// decodeAgainst reverses encodeAgainst with the same record r, returning
// at most limit bytes. b comes from a database: the columns are read where
// they lie (three cursors), never copied into memory sized by a count b
// claims, and every length and offset is checked.
func decodeAgainst(b, r []byte, limit int) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errAgainst // each segment takes at least two bytes
	}
	// skip returns b after count uvarints, and how many of them were not 0.
	skip := func(b []byte, count uint64) ([]byte, int, bool) {
		nonzero := 0
		for range count {
			v, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, 0, false
			}
			if v != 0 {
				nonzero++
			}
			b = b[k:]
		}
		return b, nonzero, true
	}
	lits := b[k:]
	copies, _, ok := skip(lits, n)
	if !ok {
		return nil, errAgainst
	}
	offs, nCopies, ok := skip(copies, n)
	if !ok {
		return nil, errAgainst
	}
	literal, _, ok := skip(offs, uint64(nCopies))
	if !ok {
		return nil, errAgainst
	}
	var m []byte
	for range n {
		l, k1 := binary.Uvarint(lits)
		cp, k2 := binary.Uvarint(copies)
		lits, copies = lits[k1:], copies[k2:]
		if l > uint64(len(literal)) || uint64(len(m))+l+cp > uint64(limit) {
			return nil, errAgainst
		}
		m, literal = append(m, literal[:l]...), literal[l:]
		if cp == 0 {
			continue
		}
		off, k3 := binary.Uvarint(offs)
		offs = offs[k3:]
		if off > uint64(len(r)) || cp > uint64(len(r))-off {
			return nil, errAgainst
		}
		m = append(m, r[off:off+cp]...)
	}
	if len(literal) != 0 {
		return nil, errAgainst
	}
	return m, nil
}
