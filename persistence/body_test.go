package persistence

import (
	"bytes"
	"compress/flate"
	"strings"
	"testing"
)

// bomb is a packed body that claims far more than it holds: DEFLATE of a
// run of zeros.
func bomb(n int) []byte {
	var buf bytes.Buffer
	buf.WriteString(packedPrefix)
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	for ; n > 0; n -= len(zeros) {
		w.Write(zeros[:min(n, len(zeros))])
	}
	w.Close()
	return buf.Bytes()
}

// FuzzEventRecord: Event.Record reads bodies from a database. Whatever they
// hold it returns a plain body as it is, inflates a packed one or fails
// cleanly, and what PackRecord stores always reads back exactly.
func FuzzEventRecord(f *testing.F) {
	f.Add([]byte(`{"id":1,"content":"hello"}`))
	f.Add([]byte("\x00deflate\n"))
	f.Add([]byte("\x00deflate\nnot deflate at all \xff\xfe"))
	f.Add([]byte("control \x00\x01\x02\x1b[31m\r\n\t and invalid UTF-8 \xc3\x28 \xed\xa0\x80"))
	f.Add([]byte(strings.Repeat(`{"content":"a huge record that repeats itself"}`, 20000)))
	f.Add(PackRecord([]byte(strings.Repeat(`{"content":"packed \u0000 \ud800"}`, 500))))
	f.Add(bomb(8 << 20))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := Event{Kind: EventMessageAppended, Body: body}
		got, err := e.Record()
		if (len(body) == 0 || body[0] != 0) && (err != nil || !bytes.Equal(got, body)) {
			t.Fatalf("a plain body came back as %q, %v", got, err)
		}
		if len(got) > maxUnpacked {
			t.Fatalf("inflated to %d bytes", len(got))
		}
		if len(body) > 0 && body[0] == 0 {
			return // not a record PackRecord is given: records are JSON
		}
		packed := Event{Kind: EventMessageUpdated, Body: PackRecord(body)}
		if back, err := packed.Record(); err != nil || !bytes.Equal(back, body) {
			t.Fatalf("PackRecord(%q) read back as %q, %v", body, back, err)
		}
	})
}

// TestRecordBomb: a packed body that inflates beyond the bound is an error,
// not gigabytes of memory.
func TestRecordBomb(t *testing.T) {
	defer func(n int) { maxUnpacked = n }(maxUnpacked)
	maxUnpacked = 4 << 20
	e := Event{Kind: EventMessagesChanged, Body: bomb(maxUnpacked + 1<<20)}
	if _, err := e.Record(); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("Record of a bomb = %v, want an error", err)
	}
}

// TestRecordOfFrame: a frame's body is read with Frames, not Record.
func TestRecordOfFrame(t *testing.T) {
	e := Event{Kind: EventNotification, Body: []byte(`{}`)}
	if _, err := e.Record(); err == nil {
		t.Fatal("Record of a frame succeeded")
	}
}
