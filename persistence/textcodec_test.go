package persistence

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/klauspost/compress/huff0"
)

// TestProseTable: the fixed table decodes, and this huff0 builds exactly
// it from its counts, so that text is coded with it at all (else every
// text would silently fall back to S2 or none).
func TestProseTable(t *testing.T) {
	c, err := proseCodec()
	if err != nil {
		t.Fatal(err)
	}
	if !c.encodes {
		t.Fatal("huff0 no longer builds proseTable from proseCounts: prose is stored uncoded")
	}
}

// TestEncodeText: each text is stored in its smallest form and decodes
// back exactly: prose with the fixed table, text that repeats with S2,
// text neither shortens as it is.
func TestEncodeText(t *testing.T) {
	random := make([]byte, 3000)
	rand.Read(random)
	for _, c := range []struct {
		what  string
		text  string
		codec byte
	}{
		{"prose", "The agent reads the file, edits the function and runs the tests again; " +
			"then it explains what changed and why the old code failed on an empty list.", codecHuff},
		{"a log that repeats", strings.Repeat("2026-11-27 INFO request served in 3 ms\n", 50), codecS2},
		{"random bytes", string(random), codecRaw},
		{"CJK", cjk(300), codecRaw}, // each character three bytes the table codes long
		{"longer than a huff0 block", strings.Repeat("x", huff0.BlockSizeMax+10), codecS2},
		{"hex", hex.EncodeToString(random), codecRaw}, // digits are rare in the table's prose
	} {
		codec, block := encodeText([]byte(c.text))
		if codec != c.codec {
			t.Errorf("%s: codec %d, want %d (%d bytes for %d)", c.what, codec, c.codec, len(block), len(c.text))
		}
		if codec != codecRaw && len(block) >= len(c.text) {
			t.Errorf("%s: coded in %d bytes, not fewer than %d", c.what, len(block), len(c.text))
		}
		got, err := decodeText(codec, len(c.text), block)
		if err != nil || got != c.text {
			t.Errorf("%s: decodes to %d bytes, %v", c.what, len(got), err)
		}
		// Into a shared buffer, as RecordTexts does.
		buf := make([]byte, 5, 5+len(c.text)+7)
		dst := buf[5 : 5 : 5+len(c.text)]
		if got, err := decodeTextInto(codec, len(c.text), block, dst); err != nil || got != c.text {
			t.Errorf("%s: decodes into a buffer to %d bytes, %v", c.what, len(got), err)
		}
		if len(c.text) > 0 {
			if _, err := decodeText(codec, len(c.text)-1, block); err == nil {
				t.Errorf("%s: decoded with a length one short", c.what)
			}
		}
	}
}

// TestRecordTexts: the texts of many records decoded together equal each
// decoded alone, whatever their forms, and a damaged one is an error of its
// own.
func TestRecordTexts(t *testing.T) {
	var bodies [][]byte
	var want []TextOf
	for i, content := range []string{
		strings.Repeat("prose of a reply, ", 30),
		"short",
		strings.Repeat("a log line that repeats\n", 40),
		strings.Repeat("x", MinTextRecord),
	} {
		rec := messageRecordJSON(t, content, i)
		body := packTextRecord(rec)
		if body == nil {
			body = PackRecord(rec)
		}
		bodies = append(bodies, body)
		want = append(want, TextOf{Text: content, From: i})
	}
	damaged := bytes.Clone(bodies[0])
	damaged[len(textPrefix)+12] ^= 0xff // in the coded text
	bodies = append(bodies, damaged, []byte("\x00text\n\x01"))
	got := RecordTexts(bodies)
	for i, w := range want {
		if got[i] != w {
			t.Errorf("record %d: %d bytes from %d, %v; want %d bytes from %d", i, len(got[i].Text), got[i].From, got[i].Err, len(w.Text), w.From)
		}
	}
	if got[4].Err == nil && got[4].Text == want[0].Text {
		t.Error("a damaged record decoded to the text it had")
	}
	if got[5].Err == nil {
		t.Error("a truncated record decoded")
	}
}

// cjk is n characters of CJK ideographs that do not repeat.
func cjk(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteRune(rune(0x4e00 + (i*7919)%20000))
	}
	return b.String()
}
