package persistence

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/deflate"
)

// chunkFrames is a streamed reply of text in chunks of size characters, as
// crow-acp sends it: one session/update a chunk, joined by newlines.
func chunkFrames(text string, size int) []byte {
	var frames []string
	for i := 0; i < len(text); i += size {
		chunk := text[i:min(i+size, len(text))]
		frames = append(frames, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_0123456789abcdef0123456789abcdef","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}}}`, chunk))
	}
	return []byte(strings.Join(frames, "\n"))
}

// varied is n bytes of text without long repeats, like prose: words drawn
// at random from 300 made of random syllables, which DEFLATE alone cannot
// shrink much below half.
func varied(n int) string {
	x := uint32(2463534242)
	next := func() uint32 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return x
	}
	syllables := []string{"ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "pri", "stu", "gre", "an", "el", "is", "or", "um"}
	words := make([]string, 300)
	for i := range words {
		for range 1 + next()%4 {
			words[i] += syllables[next()%uint32(len(syllables))]
		}
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[next()%uint32(len(words))])
		if next()%9 == 0 {
			b.WriteString(". ")
		} else {
			b.WriteString(" ")
		}
	}
	return b.String()[:n]
}

// TestPackFramesTextOnce: 1,000 frames of 4 characters each (a token a
// chunk, as providers stream) pack to less than their text (DEFLATE of the
// frames alone: more than the text, the envelope costing bytes a chunk),
// and read back byte for byte.
func TestPackFramesTextOnce(t *testing.T) {
	text := varied(4000)
	body := chunkFrames(text, 4)
	packed := PackFrames(body)
	if limit := len(text) * 3 / 4; len(packed) > limit {
		t.Errorf("1,000 frames of a %d-byte text (%d bytes) packed to %d bytes, want <= %d", len(text), len(body), len(packed), limit)
	}
	e := Event{Kind: EventNotification, Direction: DirOut, Body: packed}
	if got := bytes.Join(e.Frames(), []byte("\n")); !bytes.Equal(got, body) {
		t.Fatalf("frames read back differ:\n%.300q\nwant\n%.300q", got, body)
	}
}

// TestFramesOldPacking: runs stored by earlier versions (plain DEFLATE)
// still read back.
func TestFramesOldPacking(t *testing.T) {
	body := chunkFrames(varied(2000), 20)
	e := Event{Kind: EventNotification, Direction: DirOut, Body: pack(body)}
	if !bytes.HasPrefix(e.Body, []byte(packedPrefix)) {
		t.Fatal("not packed")
	}
	if got := bytes.Join(e.Frames(), []byte("\n")); !bytes.Equal(got, body) {
		t.Fatal("frames read back differ")
	}
}

// FuzzFrames: Event.Frames reads bodies from a database. Whatever an
// outbound frame event's body holds, it returns without panicking, within
// the bound; and any run PackFrames packs reads back exactly.
func FuzzFrames(f *testing.F) {
	f.Add(chunkFrames("a reply in chunks", 4))
	f.Add(chunkFrames("control \x00\x01\x1b[0m\r\t and invalid UTF-8 \xc3\x28 \xed\xa0\x80", 3))
	f.Add(chunkFrames(varied(200_000), 4))
	f.Add([]byte("{}\n{}\n\n{}"))
	f.Add([]byte(""))
	f.Add([]byte(framesPrefix))
	f.Add([]byte(framesPrefix + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add(PackFrames(chunkFrames(varied(3000), 4)))
	f.Add(deflate.Pack(framesPrefix, []byte{3, 0, 0, 0, 0, 0, 0, 1, 1, 1, 'a', 'b', 'c'}))
	f.Add(deflate.Pack(framesPrefix, []byte{2, 0, 200, 0, 0, 0, 0, 'x'}))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := Event{Kind: EventNotification, Direction: DirOut, Body: body}
		frames := e.Frames()
		total := 0
		for _, fr := range frames {
			total += len(fr)
		}
		if total > max(maxUnpacked, len(body)) {
			t.Fatalf("%d bytes of frames", total)
		}
		if len(body) > 0 && body[0] == 0 {
			return // not frames PackFrames is given: frames are JSON
		}
		p := Event{Kind: EventNotification, Direction: DirOut, Body: PackFrames(body)}
		if got := bytes.Join(p.Frames(), []byte("\n")); !bytes.Equal(got, body) {
			t.Fatalf("PackFrames(%q) read back as %q", body, got)
		}
	})
}

// FuzzFramesAgainstRecord: FramesAt reads a run packed against the record
// after it from a database. Whatever the run's body and the record hold, it
// returns frames within the bound or an error, never panics; and any run
// PackWrite packs against any record reads back exactly.
func FuzzFramesAgainstRecord(f *testing.F) {
	text := varied(3000)
	f.Add(chunkFrames(text, 4), []byte(`{"id":3,"contentFrom":0,"content":"`+text+`"}`), uint8(1))
	f.Add(chunkFrames("control \x00\x01\x1b[0m\r\t and invalid UTF-8 \xc3\x28 \xed\xa0\x80", 3), []byte("\x00\xff{\"content\":\"\xc3\x28\"}"), uint8(2))
	f.Add(chunkFrames(varied(20_000), 4), []byte(varied(20_000)), uint8(1)) // ~1 MB of frames
	f.Add([]byte(framesRecordPrefix+"\x01\xff\xfe"), []byte(`{}`), uint8(1))
	f.Add([]byte(framesRecordPrefix+"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), []byte(`{}`), uint8(0))
	f.Add([]byte(framesRecordPrefix), []byte(""), uint8(3))
	f.Add(encodeAgainst([]byte("abcdefghij0123456789"), indexRecord([]byte(`{"content":"abcdefghij0123456789"}`))), []byte(`{"content":"abcdefghij0123456789"}`), uint8(0))
	f.Add([]byte{2, 3, 0, 9, 0, 5, 'x', 'y', 'z'}, []byte("0123456789abc"), uint8(0))
	f.Fuzz(func(t *testing.T, body, record []byte, gap uint8) {
		// The run, gap frames of another kind, then the record.
		evs := []Event{{Seq: 1, Kind: EventNotification, Direction: DirOut, Body: body}}
		for i := range int(gap % 4) {
			evs = append(evs, Event{Seq: int64(2 + i), Kind: EventNotification, Direction: DirOut, Body: []byte("{}")})
		}
		evs = append(evs, Event{Seq: int64(len(evs) + 1), Kind: EventMessageUpdated, Body: PackRecord(record)})
		// The copies' decoder on its own, given any bytes.
		if m, err := decodeAgainst(body, record, 1<<20); err == nil && len(m) > 1<<20 {
			t.Fatalf("decodeAgainst returned %d bytes over its limit", len(m))
		}
		frames, err := FramesAt(evs, 0)
		total := 0
		for _, fr := range frames {
			total += len(fr)
		}
		if err == nil && total > max(maxUnpacked, len(body)) {
			t.Fatalf("%d bytes of frames", total)
		}
		if len(body) == 0 || body[0] == 0 || len(record) == 0 {
			return // frames are JSON; records are JSON
		}
		run := &Event{Stream: "s", Kind: EventNotification, Direction: DirOut, Body: body}
		var pending []*Event
		pending = append(pending, run)
		for range int(gap % 4) {
			pending = append(pending, &Event{Stream: "s", Kind: EventRequest, Direction: DirIn, Body: []byte("{}")})
		}
		packed := PackWrite(pending, []*Event{{Stream: "s", Kind: EventMessageUpdated, Body: record}})
		evs = evs[:0]
		for i, e := range packed {
			e.Seq = int64(i + 1)
			evs = append(evs, *e)
		}
		frames, err = FramesAt(evs, 0)
		if got := bytes.Join(frames, []byte("\n")); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("PackWrite(%.100q) against %.100q read back as %.100q (%v)", body, record, got, err)
		}
	})
}
