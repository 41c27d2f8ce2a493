package persistence

import (
	"bytes"
	"strings"
	"testing"
)

// TestEncodeAgainst: text the record holds costs a few bytes, text that
// differs from it in places (an escape written another way) costs little
// more than the differences, text it does not hold is stored whole; all
// read back exactly, and only with that record.
func TestEncodeAgainst(t *testing.T) {
	text := varied(4000)
	record := []byte(`{"id":9,"contentFrom":120,"content":` + `"` + text + `"}`)
	escaped := strings.Replace(text, " ", "\\u003c", 5) // 5 places where the frames and the record differ
	for _, c := range []struct {
		name string
		m    string
		max  int
	}{
		{"the record's text", text, 40},
		{"a stretch of it", text[1000:3000], 40},
		{"five differences", escaped, 40 + 5*20},
		{"text it does not hold", varied(3000)[7:], 3000 + 20},
		{"empty", "", 4},
	} {
		enc := encodeAgainst([]byte(c.m), indexRecord(record))
		if len(enc) > c.max {
			t.Errorf("%s: %d bytes of text encoded in %d, want <= %d", c.name, len(c.m), len(enc), c.max)
		}
		got, err := decodeAgainst(enc, record, 1<<20)
		if err != nil || !bytes.Equal(got, []byte(c.m)) {
			t.Fatalf("%s: read back %d bytes (%v), want the %d encoded", c.name, len(got), err, len(c.m))
		}
		if c.name == "the record's text" {
			other := bytes.Replace(record, []byte("a"), []byte("b"), -1)
			if got, err := decodeAgainst(enc, other, 1<<20); err == nil && bytes.Equal(got, []byte(c.m)) {
				t.Error("read back with another record")
			}
			if _, err := decodeAgainst(enc, record, len(c.m)-1); err == nil {
				t.Error("a limit one byte short was not refused")
			}
		}
	}
}
