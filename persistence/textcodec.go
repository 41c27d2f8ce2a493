package persistence

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/s2"
)

// How a text record's text is compressed (textRecord.codec); the numbers
// are stored and never reused. A text is stored in whichever form is
// smallest.
const (
	codecRaw  = 0 // as it is
	codecS2   = 1 // S2 (LZ77, Snappy's successor): text that repeats itself, such as logs and code
	codecHuff = 2 // Huffman coding with the fixed table proseTable: prose
)

// Prose barely repeats within a message, so LZ77 codecs keep ~85% of a
// KiB of it; Huffman coding keeps ~60%, but a table of its own in each
// record costs what it saves on short texts, and building the decoder
// from it costs more than decoding. So prose is coded with one fixed table,
// written once here and never changed (records hold text coded with it):
// proseTable, huff0's serialised form, is what decodes codecHuff;
// proseCounts, the byte counts it was built from (crow-acp's own README
// and Go sources, English and code; every byte value at least once), is
// what encodes it, when huff0 builds exactly proseTable from them.
var proseTable = []byte{
	0x3b, 0x10, 0xb0, 0x33, 0x61, 0x0, 0xff, 0xc3, 0xff, 0xf0, 0x3f, 0xfc,
	0xf, 0xff, 0xc3, 0xfa, 0x7f, 0xde, 0xfb, 0xb7, 0xec, 0xdd, 0x4d, 0xba,
	0x4b, 0xd9, 0xd6, 0x5f, 0x4a, 0x4b, 0xb9, 0x7d, 0x2f, 0xc5, 0x0, 0xda,
	0x77, 0x9b, 0x90, 0xb4, 0x40, 0x9b, 0xf6, 0xe0, 0x81, 0x8, 0x4, 0x24,
	0xf4, 0xd9, 0x89, 0x94, 0x89, 0x49, 0x32, 0xfc, 0x8e, 0x82, 0xc7, 0xc,
}

var proseCounts = [256]uint32{
	1, 1, 1, 1, 1, 1, 1, 1, 1, 19363, 16371, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	65535, 1309, 11618, 62, 93, 1243, 789, 584, 7968, 7967, 1084, 624, 10559, 1486, 11131, 5105,
	1775, 969, 699, 346, 528, 222, 408, 110, 165, 137, 6263, 884, 298, 5193, 229, 76,
	18, 1351, 628, 2599, 1496, 1782, 1259, 200, 318, 1633, 225, 304, 977, 1459, 874, 1077,
	1196, 116, 1941, 2476, 2158, 732, 255, 497, 45, 49, 29, 1699, 623, 1686, 6, 1548,
	1840, 23029, 3265, 13814, 12211, 46110, 8479, 7369, 6981, 22500, 840, 2921, 13593, 9166, 28065, 24064,
	9908, 1258, 29911, 29582, 35513, 9637, 3480, 4347, 3184, 3487, 318, 4660, 910, 4643, 25, 1,
	48, 1, 1, 1, 1, 1, 25, 1, 1, 2, 1, 1, 1, 1, 1, 1,
	1, 1, 24, 28, 6, 1, 1, 8, 1, 2, 1, 1, 6, 1, 1, 2,
	2, 1, 1, 1, 24, 1, 17, 1, 1, 5, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 3, 2, 1, 1, 1, 1, 1, 3, 1, 1, 1,
	1, 1, 4, 38, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 86, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
}

// proseCodec is the Huffman coder of proseTable, made on first use.
var proseCodec = sync.OnceValues(func() (*proseCoder, error) {
	var dec huff0.Scratch
	d, rest, err := huff0.ReadTable(proseTable, &dec)
	if err != nil || len(rest) != 0 {
		return nil, errors.New("text record: the prose table does not read")
	}
	c := &proseCoder{dec: d.Decoder()}
	// Encode only if this huff0 builds the very table records are
	// decoded with; else text is stored with S2 or as it is.
	if err := c.enc.BuildCTable(&proseCounts); err == nil {
		if t, err := c.enc.AppendTable(nil); err == nil && string(t) == string(proseTable) {
			c.encodes = true
		}
	}
	return c, nil
})

type proseCoder struct {
	dec     *huff0.Decoder // stateless: safe for concurrent use
	enc     huff0.Scratch  // holds the table; copied into each encoder
	encodes bool
}

// encode returns text coded with proseTable, or nil.
func (c *proseCoder) encode(text []byte) []byte {
	if !c.encodes || len(text) > huff0.BlockSizeMax {
		return nil
	}
	var s huff0.Scratch
	s.TransferCTable(&c.enc)
	s.Reuse = huff0.ReusePolicyMust
	out, reused, err := huff0.Compress4X(text, &s)
	if err != nil || !reused {
		return nil // a text huff0 will not code (one byte value repeated, say)
	}
	return out
}

// encodeText returns the smallest form of text and its codec.
func encodeText(text []byte) (codec byte, block []byte) {
	codec, block = codecRaw, text
	if b := s2.EncodeBetter(nil, text); len(b) < len(block) {
		codec, block = codecS2, b
	}
	if c, err := proseCodec(); err == nil {
		if b := c.encode(text); b != nil && len(b) < len(block) {
			codec, block = codecHuff, append([]byte(nil), b...)
		}
	}
	return codec, block
}

// decodeText returns the n bytes of text block holds in codec's form, as
// a string of its own (block may be a database driver's buffer).
func decodeText(codec byte, n int, block []byte) (string, error) {
	if !textFits(codec, n, block) {
		return "", errTextRecord
	}
	return decodeTextInto(codec, n, block, make([]byte, 0, n))
}

// textFits reports whether block can hold n bytes of text in codec's
// form, before n bytes are made room for: a damaged record must not claim
// a gigabyte from a few bytes.
func textFits(codec byte, n int, block []byte) bool {
	if n < 0 || n > maxUnpacked {
		return false
	}
	switch codec {
	case codecRaw:
		return len(block) == n
	case codecS2:
		m, err := s2.DecodedLen(block)
		return err == nil && m == n
	case codecHuff:
		return n <= 8*len(block) // no code is shorter than a bit
	}
	return false
}

// decodeTextInto is decodeText into dst, of length 0 and capacity n, for
// a block that fits (textFits): the string is dst's bytes, which must
// never be written again. A block that decodes to other than n bytes, or
// anywhere but dst, is an error.
func decodeTextInto(codec byte, n int, block, dst []byte) (string, error) {
	var out []byte
	switch codec {
	case codecRaw:
		out = append(dst, block...)
	case codecS2:
		var err error
		if out, err = s2.Decode(dst[:n], block); err != nil {
			return "", errTextRecord
		}
	case codecHuff:
		c, err := proseCodec()
		if err != nil {
			return "", err
		}
		if out, err = c.dec.Decompress4X(dst, block); err != nil {
			return "", errTextRecord
		}
	default:
		return "", errTextRecord
	}
	if len(out) != n || n > 0 && &out[0] != &dst[:1][0] {
		return "", errTextRecord // not where it was asked to go
	}
	if n == 0 {
		return "", nil
	}
	return unsafe.String(unsafe.SliceData(out), n), nil
}
