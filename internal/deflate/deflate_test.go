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

// TestPackDict: text the dictionary holds costs a few bytes, it reads back
// only with that dictionary, and the shared writer packs as before after
// it (Pack after PackDict must not refer to the dictionary).
func TestPackDict(t *testing.T) {
	x := uint32(2463534242)
	text := make([]byte, 4000) // random letters: DEFLATE alone keeps ~60%
	for i := range text {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		text[i] = 'a' + byte(x%26)
	}
	dict := append([]byte(`{"id":7,"content":"`), append(text, `"}`...)...)
	for _, size := range []int{0, 10, 200, len(text)} {
		b := text[:size]
		packed := PackDict("\x00d\n", dict, b)
		alone := Pack("\x00d\n", b)
		if size == len(text) && len(packed) > len(alone)/10 {
			t.Errorf("%d bytes in the dictionary packed to %d, alone %d", size, len(packed), len(alone))
		}
		got, err := UnpackDict(packed[3:], dict, len(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d bytes: read back %d (%v)", size, len(got), err)
		}
		if size == len(text) {
			if got, err := Unpack(packed[3:], len(b)); err == nil && bytes.Equal(got, b) {
				t.Fatal("read back without the dictionary")
			}
		}
		if got, err := Unpack(alone[3:], len(b)); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("Pack after PackDict: %d bytes read back (%v)", len(got), err)
		}
	}
	// A dictionary longer than the window: its last 32 KB count.
	long := append(bytes.Repeat([]byte("x"), 100<<10), dict...)
	packed := PackDict("", long, text)
	if got, err := UnpackDict(packed, long, len(text)); err != nil || !bytes.Equal(got, text) {
		t.Fatalf("long dictionary: read back %d bytes (%v)", len(got), err)
	}
}
