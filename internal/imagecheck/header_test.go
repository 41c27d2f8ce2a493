package imagecheck

import (
	"encoding/hex"
	"strings"
	"testing"
)

// webpSamples are WebP headers laid out as the container specification
// (developers.google.com/speed/webp/docs/riff_container) says, one per
// chunk kind. The VP8X one is the first 30 bytes of CPython's test image
// Lib/test/test_email/data/python.webp (16×16).
var webpSamples = map[string]struct {
	b    []byte
	w, h int
}{
	"VP8X": {mustHex("52494646a801000057454250565038580a000000100000000f00000f0000"), 16, 16},
	// Lossless: signature 0x2f, then (w-1) | (h-1)<<14 in 28 bits: 37×21.
	"VP8L": {vp8l(37, 21), 37, 21},
	// Lossy: frame tag, start code 9d 01 2a, 14-bit width and height: 640×480.
	"VP8": {mustHex("52494646200000005745425056503820140000001000009d012a8002e001"), 640, 480},
}

func vp8l(w, h int) []byte {
	b := []byte("RIFF\x20\x00\x00\x00WEBPVP8L\x14\x00\x00\x00\x2f")
	v := uint32(w-1) | uint32(h-1)<<14
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), 0, 0, 0, 0, 0)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestDimensions: every format's header gives its size; a short, broken or
// absurd header gives 0, 0.
func TestDimensions(t *testing.T) {
	for _, f := range []string{"png", "jpeg", "gif"} {
		raw := encode(t, f, 300, 200, false)
		if w, h := Dimensions(raw[:min(len(raw), 1024)]); w != 300 || h != 200 {
			t.Errorf("%s header: %d×%d", f, w, h)
		}
		if w, h := DimensionsBase64(b64(raw)); w != 300 || h != 200 {
			t.Errorf("%s base64: %d×%d", f, w, h)
		}
		if w, h := Dimensions(raw[:10]); w != 0 || h != 0 {
			t.Errorf("%s cut at 10 bytes: %d×%d", f, w, h)
		}
	}
	for name, s := range webpSamples {
		if w, h := Dimensions(s.b); w != s.w || h != s.h {
			t.Errorf("webp %s: %d×%d, want %d×%d", name, w, h, s.w, s.h)
		}
		if w, h := Dimensions(s.b[:20]); w != 0 || h != 0 {
			t.Errorf("webp %s cut: %d×%d", name, w, h)
		}
	}
	// A VP8X header claiming 16M pixels a side is not believed.
	huge := append([]byte(nil), webpSamples["VP8X"].b...)
	huge[24], huge[25], huge[26] = 0xff, 0xff, 0xff
	if w, h := Dimensions(huge); w != 0 || h != 0 {
		t.Errorf("absurd webp: %d×%d", w, h)
	}
	if w, h := DimensionsBase64("not base64!"); w != 0 || h != 0 {
		t.Errorf("garbage: %d×%d", w, h)
	}
	// Only the header is decoded: a long image costs no more to measure.
	long := b64(encode(t, "png", 1600, 1000, true))
	if w, h := DimensionsBase64(long); w != 1600 || h != 1000 {
		t.Errorf("long PNG: %d×%d", w, h)
	}
	if w, h := DimensionsBase64(long[:100] + strings.Repeat("!", 10)); w != 0 || h != 0 {
		t.Errorf("cut PNG: %d×%d", w, h)
	}
}
