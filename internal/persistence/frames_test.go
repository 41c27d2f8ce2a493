package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/deflate"
	"github.com/crow-acp/crow-acp/internal/deflate/deflatetest"
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

// varied is n bytes of text without long repeats, like prose.
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
		b.WriteString(" ")
	}
	return b.String()[:n]
}

func out(body []byte) *Event {
	return &Event{Seq: 7, Kind: EventNotification, Method: "session/update", Direction: DirOut, Body: body}
}

func mustFrames(t *testing.T, e *Event) []byte {
	t.Helper()
	fs, err := e.Frames(NewBudget(MaxDecoded))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Join(fs, []byte("\n"))
}

// TestRunPackedBelowText: 1,000 frames of 4 characters each (a token a
// chunk, as providers stream) are stored in fewer bytes than their text
// and read back byte for byte; a single frame is stored as it is.
func TestRunPackedBelowText(t *testing.T) {
	text := varied(4000)
	body := chunkFrames(text, 4)
	packed := PackRun(body)
	if !bytes.HasPrefix(packed, []byte(packedPrefix)) || len(packed) >= len(text) {
		t.Errorf("a run of %d bytes (%d of text) is stored in %d", len(body), len(text), len(packed))
	}
	if got := mustFrames(t, out(packed)); !bytes.Equal(got, body) {
		t.Fatal("the run reads back different")
	}
	one := chunkFrames(text, 4000)
	if got := PackRun(one); !bytes.Equal(got, one) {
		t.Errorf("a single frame is stored as %.40q", got)
	}
}

// TestFramesOf010: bodies crow-acp 0.1.0 stored (the frames DEFLATE-packed
// as they are) read back.
func TestFramesOf010(t *testing.T) {
	body := chunkFrames(varied(2000), 20)
	if got := mustFrames(t, out(deflate.Pack(packedPrefix, body))); !bytes.Equal(got, body) {
		t.Fatal("frames read back differ")
	}
}

// TestFramesReceivedAsTheyCame: a received line starting like a packed body
// is stored and read as it came.
func TestFramesReceivedAsTheyCame(t *testing.T) {
	line := []byte(packedPrefix + "not deflate")
	e := &Event{Kind: EventInvalid, Direction: DirIn, Body: line}
	if got := mustFrames(t, e); !bytes.Equal(got, line) {
		t.Fatalf("read back %q", got)
	}
}

// TestFramesBudget: crafted bodies fail with an error naming the event,
// within one budget across bodies: a small body claiming a huge middle, a
// DEFLATE bomb, several bodies each under the budget but over it together.
func TestFramesBudget(t *testing.T) {
	const budget = 1 << 20
	bomb := deflate.Pack(packedPrefix, make([]byte, 64<<20))
	claim := deflate.Pack(packedPrefix, append([]byte{columnsMark, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1}, 'x'))
	for name, body := range map[string][]byte{"bomb": bomb, "huge claim": claim} {
		_, err := out(body).Frames(NewBudget(budget))
		if err == nil || !strings.Contains(err.Error(), "event 7 (notification session/update)") {
			t.Errorf("%s (%d bytes): %v, want an error naming the event", name, len(body), err)
		}
	}
	part := PackRun(chunkFrames(varied(budget/3), 8)) // each decodes to ~16× its text
	b := NewBudget(budget * 8)
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = out(part).Frames(b)
	}
	if !errors.Is(err, errBudget) {
		t.Fatalf("ten runs of a third of the budget each: %v, want the budget's error", err)
	}
}

// TestFramesAllocateWithinTheBudget (issue 37, item 9): a read allocates
// no more than its budget, however its bodies are made, and is stopped
// before the body that would pass it is inflated: runs that each fit the
// budget alone (three of 400 MiB reached 1.8 GiB of a 1 GiB budget), a
// bomb, and a small run claiming a million empty frames (their numbers
// and slices were made before the budget saw them).
func TestFramesAllocateWithinTheBudget(t *testing.T) {
	const budget = 48 << 20
	run := deflate.Pack(packedPrefix, bytes.Repeat([]byte(strings.Repeat("x", 1<<20)+"\n"), 20))
	empties := append([]byte{columnsMark}, binary.AppendUvarint(nil, 1<<20)...)
	empties = deflate.Pack(packedPrefix, append(empties, make([]byte, 3<<20)...))
	for name, bodies := range map[string][][]byte{
		"three runs of 20 MiB":   {run, run, run},
		"bomb":                   {append([]byte(packedPrefix), deflatetest.Zeros(1<<30)...)},
		"a million empty frames": {empties},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b := NewBudget(budget)
		var err error
		for _, body := range bodies {
			if _, err = out(body).Frames(b); err != nil {
				break
			}
		}
		runtime.ReadMemStats(&after)
		if !errors.Is(err, errBudget) {
			t.Errorf("%s: %v, want the budget's error", name, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > budget+1<<20 {
			t.Errorf("%s: the read allocated %d MiB for a budget of %d MiB", name, n>>20, budget>>20)
		}
	}
}

// FuzzFrames: Event.Frames reads bodies from a database. Whatever an
// outbound frame event's body holds, it returns the frames or an error
// within its budget, never panics; and any run PackRun packs reads back
// exactly.
func FuzzFrames(f *testing.F) {
	f.Add(chunkFrames("a reply in chunks", 4))
	f.Add(chunkFrames("control \x00\x01\x1b[0m\r\t and invalid UTF-8 \xc3\x28 \xed\xa0\x80", 3))
	f.Add(chunkFrames(varied(200_000), 4))
	f.Add([]byte("{}\n{}\n\n{}"))
	f.Add([]byte(""))
	f.Add([]byte(packedPrefix))
	f.Add([]byte(packedPrefix + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add(PackRun(chunkFrames(varied(3000), 4)))
	f.Add(deflate.Pack(packedPrefix, []byte{columnsMark, 3, 0, 0, 0, 0, 0, 0, 1, 1, 1, 'a', 'b', 'c'}))
	f.Add(deflate.Pack(packedPrefix, []byte{columnsMark, 2, 0, 200, 0, 0, 0, 0, 'x'}))
	f.Add(deflate.Pack(packedPrefix, make([]byte, 4<<20)))
	f.Fuzz(func(t *testing.T, body []byte) {
		const budget = 1 << 20
		frames, err := out(body).Frames(NewBudget(budget))
		total := 0
		for _, fr := range frames {
			total += len(fr)
		}
		if err == nil && total > max(budget, len(body)) {
			t.Fatalf("%d bytes of frames", total)
		}
		if len(body) > 0 && body[0] == 0 {
			return // not frames PackRun is given: frames are JSON
		}
		if got := mustFrames(t, out(PackRun(body))); !bytes.Equal(got, body) {
			t.Fatalf("PackRun(%q) read back as %q", body, got)
		}
	})
}
