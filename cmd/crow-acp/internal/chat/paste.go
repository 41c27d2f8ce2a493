package chat

import (
	"bytes"
	"io"
	"strings"
)

// Bracketed paste: once the chat asks for it (pasteOn), the terminal sends
// pasted text between ESC[200~ and ESC[201~. pasteFilter, between the
// terminal and the line editor, turns the newlines inside into
// pasteNewline, so that a pasted block arrives as one line (the line
// editor would send each pasted line as a prompt of its own), and
// ReadLine turns them back into newlines.
const (
	pasteOn      = "\x1b[?2004h"
	pasteOff     = "\x1b[?2004l"
	pasteStart   = "\x1b[200~"
	pasteEnd     = "\x1b[201~"
	pasteNewline = "↵"
)

type pasteFilter struct {
	r       io.Reader
	pasting bool
	carry   []byte // the start of a marker a read ended inside
	out     []byte // filtered bytes not yet returned
	buf     [4096]byte
}

func (f *pasteFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		n, err := f.r.Read(f.buf[:])
		f.filter(f.buf[:n])
		if err != nil {
			if len(f.out) == 0 {
				f.out, f.carry = f.carry, nil // a lone ESC at the end is still a key
			}
			if len(f.out) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// Close ends the line editor's wait on the terminal.
func (f *pasteFilter) Close() error {
	if c, ok := f.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (f *pasteFilter) filter(chunk []byte) {
	data := append(f.carry, chunk...)
	f.carry = nil
	for i := 0; i < len(data); i++ {
		c := data[i]
		rest := data[i:]
		switch {
		case c == 0x1b && bytes.HasPrefix(rest, []byte(pasteStart)):
			f.pasting = true
			i += len(pasteStart) - 1
		case c == 0x1b && bytes.HasPrefix(rest, []byte(pasteEnd)):
			f.pasting = false
			i += len(pasteEnd) - 1
		case c == 0x1b && len(rest) < len(pasteStart) &&
			(strings.HasPrefix(pasteStart, string(rest)) || strings.HasPrefix(pasteEnd, string(rest))):
			f.carry = append([]byte(nil), rest...) // the rest of the marker is in the next read
			return
		case f.pasting && (c == '\r' || c == '\n'):
			if c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			f.out = append(f.out, pasteNewline...)
		default:
			f.out = append(f.out, c)
		}
	}
}

// unpaste is a line as typed: pasted newlines are newlines again.
func unpaste(line string) string { return strings.ReplaceAll(line, pasteNewline, "\n") }
