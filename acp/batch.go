package acp

import (
	"context"
	"fmt"
)

// batchBytes is about how much an UpdateBatch gathers before it writes: a
// pipe's buffer.
const batchBytes = 64 << 10

// UpdateBatch sends session/update notifications like Conn.SessionUpdate,
// but gathers their frames and writes them together, about batchBytes at a
// time. A session/load replays thousands of updates at once: one write per
// frame cost a system call each and woke the client for each. Every frame
// is still written whole and in order, and OnFrame sees each one; frames
// of other writers can come only between two writes of the batch.
//
// An UpdateBatch is used by one goroutine; Flush writes what it holds, and
// must be called before anything that the client should see after the
// batched updates (a response).
type UpdateBatch struct {
	c    *Conn
	buf  []byte
	ends []int // where each frame in buf ends (after its newline)
}

// Batch returns an empty UpdateBatch writing to c.
func (c *Conn) Batch() *UpdateBatch { return &UpdateBatch{c: c} }

// SessionUpdate adds n's frame (encoded at once: n is not kept), and
// writes the batch once it is full.
func (b *UpdateBatch) SessionUpdate(_ context.Context, n *SessionNotification) error {
	if err := b.c.checkUpdate(n); err != nil {
		return err
	}
	start := len(b.buf)
	buf, err := appendUpdateFrame(b.buf, n)
	if err != nil {
		b.buf = b.buf[:start]
		return fmt.Errorf("acp: encode frame: %w", err)
	}
	b.buf = append(buf, '\n')
	b.ends = append(b.ends, len(b.buf))
	if len(b.buf) >= batchBytes {
		return b.Flush()
	}
	return nil
}

// Flush writes the frames gathered so far.
func (b *UpdateBatch) Flush() error {
	if len(b.ends) == 0 {
		return nil
	}
	err := b.c.stream.writeFrames(b.buf, b.ends)
	b.buf, b.ends = b.buf[:0], b.ends[:0]
	if cap(b.buf) > 4*batchBytes {
		b.buf = nil // one huge frame should not stay pinned
	}
	return err
}

// writeFrames writes frames, newline-terminated and ending at ends in buf,
// with one write, after OnFrame has seen each.
func (s *LineStream) writeFrames(buf []byte, ends []int) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.onFrame != nil {
		start := 0
		for _, end := range ends {
			s.onFrame(Outbound, buf[start:end-1])
			start = end
		}
	}
	return s.writeLocked(buf)
}
