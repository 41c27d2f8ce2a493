// Package deflatetest writes DEFLATE streams for tests of what reads
// packed bodies from a database.
package deflatetest

// Zeros is a DEFLATE stream that inflates to n zero bytes (n > 0) in
// about n/160 bytes: one fixed-Huffman block of a literal 0, then copies
// of 258 bytes at distance 1. It is written directly: compress/flate
// takes seconds to pack a gigabyte, and a test of a bomb needs one that
// claims more than a read's budget.
func Zeros(n int) []byte {
	var w bitWriter
	w.bits(1, 1)    // BFINAL: the last block
	w.bits(1, 2)    // BTYPE 01: fixed Huffman codes
	w.code(0x30, 8) // literal 0 (literals 0-143: 0x30 and up, 8 bits)
	for n--; n >= 258; n -= 258 {
		w.code(0xc0+5, 8) // length code 285: 258 bytes, no extra bits
		w.code(0, 5)      // distance code 0: distance 1
	}
	for ; n > 0; n-- {
		w.code(0x30, 8)
	}
	w.code(0, 7) // end of block (256)
	return w.flush()
}

// bitWriter packs bits least significant first, as DEFLATE does.
type bitWriter struct {
	out   []byte
	acc   uint64
	nbits uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nbits
	for w.nbits += n; w.nbits >= 8; w.nbits -= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
	}
}

// code writes a Huffman code, which DEFLATE packs most significant bit
// first.
func (w *bitWriter) code(c uint64, n uint) {
	var r uint64
	for i := range n {
		r = r<<1 | c>>i&1
	}
	w.bits(r, n)
}

func (w *bitWriter) flush() []byte {
	if w.nbits > 0 {
		w.out = append(w.out, byte(w.acc))
	}
	return w.out
}
