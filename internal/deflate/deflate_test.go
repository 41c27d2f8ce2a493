package deflate

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/deflate/deflatetest"
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

// TestUnpackAllocatesWithinTheLimit (issue 37, item 9): a body larger
// than the limit is refused having allocated nothing of its size, and a
// body within it costs its size once, not the three times a growing
// buffer took (a 600 MiB run made sessions verify pass 2 GiB).
func TestUnpackAllocatesWithinTheLimit(t *testing.T) {
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	const limit = 32 << 20
	bomb := deflatetest.Zeros(256 << 20)
	var err error
	if n := allocated(func() { _, err = Unpack(bomb, limit) }); !errors.Is(err, ErrLimit) || n > 1<<20 {
		t.Errorf("a 256 MiB bomb with a 32 MiB limit: %v, %d KiB allocated; want ErrLimit and under 1 MiB", err, n>>10)
	}
	body := deflatetest.Zeros(20 << 20)
	var got []byte
	if n := allocated(func() { got, err = Unpack(body, limit) }); err != nil || len(got) != 20<<20 || n > 21<<20 {
		t.Errorf("a 20 MiB body: %d bytes (%v), %d MiB allocated; want it, at most 21 MiB", len(got), err, n>>20)
	}
	if bytes.ContainsFunc(got, func(r rune) bool { return r != 0 }) {
		t.Error("deflatetest.Zeros inflated to something else than zeros")
	}
	for _, n := range []int{1, 257, 258, 259, firstRead, firstRead + 1} {
		if got, err := Unpack(deflatetest.Zeros(n), n); err != nil || len(got) != n {
			t.Errorf("Zeros(%d): %d bytes, %v", n, len(got), err)
		}
		if _, err := Unpack(deflatetest.Zeros(n), n-1); !errors.Is(err, ErrLimit) {
			t.Errorf("Zeros(%d) within a limit one byte less: %v", n, err)
		}
	}
}
