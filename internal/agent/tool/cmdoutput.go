package tool

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Live output of a local command: while it runs, the last lines of what it
// printed reach the client in tool_call_update content (every client
// renders text content; a client with its own terminal watches that
// instead). Bounded three ways: the text sent is the last liveTailBytes
// bytes, updates are spaced (liveEvery, then liveEverySlow after
// liveFastUpdates) and a call sends at most liveMaxUpdates of them, so a
// long build adds at most about a megabyte of frames.
var (
	liveEvery     = time.Second
	liveEverySlow = 5 * time.Second
)

const (
	liveTailBytes   = 2 << 10
	liveFastUpdates = 60
	liveMaxUpdates  = 600
)

// liveTail keeps the last liveTailBytes bytes a command printed, how many it
// printed in all, and whether anything arrived since the last update.
type liveTail struct {
	mu    sync.Mutex
	buf   []byte
	total int64
	dirty bool
}

func (l *liveTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(len(p))
	l.dirty = l.dirty || len(p) > 0
	if len(p) >= liveTailBytes {
		l.buf = append(l.buf[:0], p[len(p)-liveTailBytes:]...)
		return len(p), nil
	}
	if over := len(l.buf) + len(p) - liveTailBytes; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	l.buf = append(l.buf, p...)
	return len(p), nil
}

// take returns the text to show if anything arrived since the last take:
// whole lines where the tail was cut, valid UTF-8, and a first line saying
// how much earlier output is not shown.
func (l *liveTail) take() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dirty {
		return "", false
	}
	l.dirty = false
	tail := l.buf
	hidden := l.total - int64(len(tail))
	if hidden > 0 {
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			hidden += int64(i + 1)
			tail = tail[i+1:]
		}
	}
	text := strings.ToValidUTF8(string(tail), string(utf8.RuneError))
	if hidden > 0 {
		text = fmt.Sprintf("[... %d earlier bytes not shown while the command runs ...]\n", hidden) + text
	}
	return text, true
}

// livePacer spaces the updates of one call.
type livePacer struct {
	sent int
	next time.Time
}

// ready reports whether an update may be sent at now.
func (p *livePacer) ready(now time.Time) bool {
	return p.sent < liveMaxUpdates && !now.Before(p.next)
}

// sentAt counts an update sent at now and sets when the next may go.
func (p *livePacer) sentAt(now time.Time) {
	p.sent++
	every := liveEvery
	if p.sent >= liveFastUpdates {
		every = liveEverySlow
	}
	p.next = now.Add(every)
}

// teeWriter writes to both the kept output and the live tail.
type teeWriter struct {
	kept *capBuffer
	live *liveTail
}

func (t teeWriter) Write(p []byte) (int, error) {
	_, _ = t.live.Write(p)
	return t.kept.Write(p)
}

// capBuffer keeps the first and the last limit/2 bytes written and counts
// what it dropped in between: the start of a command's output says what
// ran, the end how it ended (errors, summaries).
type capBuffer struct {
	mu      sync.Mutex
	limit   int
	head    []byte
	tail    []byte // a ring of the last limit-limit/2 bytes once head is full
	next    int    // where the ring writes next
	dropped int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := c.limit/2 - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	size := c.limit - c.limit/2
	for len(p) > 0 && size > 0 {
		if len(c.tail) < size {
			k := min(size-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(c.tail[c.next:], p)
		c.dropped += k // the bytes overwritten
		c.next = (c.next + k) % size
		p = p[k:]
	}
	c.dropped += len(p) // size 0: nothing kept
	return n, nil
}

// result is the output kept, with a note where bytes were dropped, and
// whether any were.
func (c *capBuffer) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := append(append([]byte(nil), c.tail[c.next:]...), c.tail[:c.next]...)
	if c.dropped == 0 {
		return string(c.head) + string(tail), false
	}
	return string(c.head) + fmt.Sprintf("\n[... %d bytes of output dropped ...]\n", c.dropped) + string(tail), true
}
