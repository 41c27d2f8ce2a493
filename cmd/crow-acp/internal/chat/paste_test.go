package chat

import (
	"io"
	"testing"
)

// chunks returns its pieces one Read at a time.
type chunks []string

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	(*c)[0] = (*c)[0][n:]
	if (*c)[0] == "" {
		*c = (*c)[1:]
	}
	return n, nil
}

func TestPasteFilter(t *testing.T) {
	for _, c := range []struct {
		name string
		in   chunks
		want string
	}{
		{"typed", chunks{"hello\r"}, "hello\r"},
		{"pasted lines", chunks{"\x1b[200~one\rtwo\r\nthree\x1b[201~\r"}, "one↵two↵three\r"},
		{"markers split across reads", chunks{"a\x1b[2", "00~b\r", "c\x1b", "[201~\r"}, "ab↵c\r"},
		{"arrow keys pass", chunks{"\x1b[A\x1b[B\x1b[20"}, "\x1b[A\x1b[B\x1b[20"},
		{"a lone ESC at the end", chunks{"x\x1b"}, "x\x1b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			got, err := io.ReadAll(&pasteFilter{r: &in})
			if err != nil || string(got) != c.want {
				t.Errorf("%q: got %q (%v), want %q", c.in, got, err, c.want)
			}
		})
	}
	if got := unpaste("one↵two"); got != "one\ntwo" {
		t.Errorf("unpaste: %q", got)
	}
}
