package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"testing"
)

// hugeLine yields a JSON-RPC request whose line is n bytes, without ever
// holding it in memory.
type hugeLine struct {
	head, tail []byte
	n, off     int
}

var filler = bytes.Repeat([]byte("a"), 64<<10)

func (h *hugeLine) Read(p []byte) (int, error) {
	if h.off >= h.n {
		return 0, io.EOF
	}
	var n int
	switch mid := h.n - len(h.tail); {
	case h.off < len(h.head):
		n = copy(p, h.head[h.off:])
	case h.off < mid:
		n = copy(p[:min(len(p), mid-h.off)], filler)
	default:
		n = copy(p, h.tail[h.off-mid:])
	}
	h.off += n
	return n, nil
}

// A line far over the cap is rejected while the stream allocates about the
// cap, not the line: memory stays bounded whatever the client sends.
func TestOversizedLineMemoryIsBounded(t *testing.T) {
	const line = 256 << 20
	const maxLine = 1 << 20
	next := `{"jsonrpc":"2.0","id":2,"method":"initialize"}` + "\n"
	in := io.MultiReader(&hugeLine{
		head: []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"`),
		tail: []byte("\"}}\n"), n: line,
	}, bytes.NewReader([]byte(next)))
	var out bytes.Buffer
	s := NewLineStream(in, &out, maxLine, nil)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var msg json.RawMessage
	if err := s.ReadObject(&msg); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)

	if !bytes.Contains(msg, []byte(`"method":"initialize"`)) || !bytes.Contains(out.Bytes(), []byte("too large")) {
		t.Fatalf("want the oversized line answered and the next one read; got %s / %s", msg, out.Bytes())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*maxLine {
		t.Fatalf("reading a %d MiB line allocated %d MiB: the line was buffered", line>>20, alloc>>20)
	}
}
