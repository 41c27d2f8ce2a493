package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// eventBound counts an event's bytes between empty lines, however lines
// break (LF, CRLF, CR), and fails only past the bound.
func TestEventBound(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		max        int
		ok         bool
	}{
		{"events under the bound", "data: 12345\n\ndata: 12345\n\n", 11, true},
		{"one event over it", "data: 12345\ndata: 6\n\n", 11, false},
		{"CRLF breaks", "data: 12345\r\n\r\ndata: 12345\r\n\r\n", 11, true},
		{"CRLF event over it", "data: 12345\r\ndata: 6\r\n\r\n", 11, false},
		{"CR breaks", "data: 12345\r\rdata: 12345\r\r", 11, true},
		{"a CRLF is one break, not an empty line", "data: 123\r\ndata: 456\r\n", 11, false},
		{"endless lines", strings.Repeat("data: x\n", 1000), 100, false},
	} {
		b := &eventBound{ReadCloser: io.NopCloser(strings.NewReader(tc.body)), max: tc.max}
		_, err := io.ReadAll(b)
		var le *LimitError
		if tc.ok && err != nil || !tc.ok && (!errors.As(err, &le) || le.What != LimitEvent) {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// The Responses API's stream is bounded per event like chat completions':
// an endpoint sending data lines that never end an event fails with a
// LimitError after MaxEventBytes instead of growing memory (openai-go's
// decoder joins them without a bound). The endpoint here would send 4 MiB.
func TestResponsesEventBounded(t *testing.T) {
	var written atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		line := []byte("data: " + strings.Repeat("x", 1000) + "\n")
		for written.Load() < 4<<20 {
			n, err := w.Write(line)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer hs.Close()
	c := NewResponses(OpenAIConfig{BaseURL: hs.URL, MaxEventBytes: 64 << 10})
	_, err := c.Stream(context.Background(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "go"}}}, nil)
	var le *LimitError
	if !errors.As(err, &le) || le.What != LimitEvent || le.Limit != 64<<10 {
		t.Fatalf("err %v, want the SSE event limit of 64 KiB", err)
	}
}

// FuzzEventBound: eventBound fails exactly when some event of the stream
// (bytes between empty lines, CRLF, CR and LF breaks alike) is longer than
// the bound, whatever the bytes and however the reads split them.
func FuzzEventBound(f *testing.F) {
	for _, s := range []string{"", "data: x\n\n", "data: 12345\r\n\r\ndata: 6\r\n\r\n", "a\rb\r\rc", "\r\r\n\n",
		"data: \x00\x01\x1b[31m\xff\xfe\n\n", strings.Repeat("data: xxxxxxxx\n", 5000), "\xed\xa0\x80\r\n\r\n\r"} {
		f.Add(s, 64, true)
		f.Add(s, 3, false)
	}
	f.Fuzz(func(t *testing.T, body string, bound int, oneByte bool) {
		if bound < 0 || bound > 1<<20 {
			return
		}
		norm := strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
		longest, cur, lineEmpty := 0, 0, true
		for i := 0; i < len(norm); i++ {
			if norm[i] == '\n' {
				if lineEmpty {
					cur = 0
				}
				lineEmpty = true
				continue
			}
			lineEmpty, cur = false, cur+1
			longest = max(longest, cur)
		}
		var r io.Reader = strings.NewReader(body)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		got, err := io.ReadAll(&eventBound{ReadCloser: io.NopCloser(r), max: bound})
		switch {
		case longest > bound && err == nil:
			t.Fatalf("an event of %d bytes passed a bound of %d", longest, bound)
		case longest <= bound && err != nil:
			t.Fatalf("events of at most %d bytes failed a bound of %d: %v", longest, bound, err)
		case err == nil && string(got) != body:
			t.Fatalf("the body changed: %q, want %q", got, body)
		}
	})
}
