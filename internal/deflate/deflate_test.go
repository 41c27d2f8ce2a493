package deflate

import (
	"bytes"
	"strings"
	"testing"
)

func TestPackUnpack(t *testing.T) {
	body := []byte(strings.Repeat(`{"jsonrpc":"2.0","method":"session/update"}`, 100))
	packed := Pack("\x00p\n", body)
	if !bytes.HasPrefix(packed, []byte("\x00p\n")) || len(packed) >= len(body) {
		t.Fatalf("packed %d bytes of %d, prefix %q", len(packed), len(body), packed[:min(3, len(packed))])
	}
	got, err := Unpack(packed[3:], len(body))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("unpacked %d bytes (%v), want the %d packed", len(got), err, len(body))
	}
	// One byte under what it inflates to is refused, not truncated.
	if got, err := Unpack(packed[3:], len(body)-1); err == nil {
		t.Fatalf("a limit of %d accepted %d bytes", len(body)-1, len(got))
	}
	if _, err := Unpack([]byte("\xff\xfe not deflate"), 1<<20); err == nil {
		t.Fatal("garbage inflated without an error")
	}
}

func TestCommonAffixes(t *testing.T) {
	for _, c := range []struct {
		a, b     string
		pre, suf int
	}{
		{"", "", 0, 0},
		{"abc", "abc", 3, 3},
		{"abXc", "abYc", 2, 1},
		{"ab", "abc", 2, 0},
		{"xbc", "bc", 0, 2},
	} {
		if p, s := CommonPrefix([]byte(c.a), []byte(c.b)), CommonSuffix([]byte(c.a), []byte(c.b)); p != c.pre || s != c.suf {
			t.Errorf("%q, %q: prefix %d suffix %d, want %d %d", c.a, c.b, p, s, c.pre, c.suf)
		}
	}
}
