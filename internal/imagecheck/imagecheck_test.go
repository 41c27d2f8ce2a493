package imagecheck

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"
)

// encode makes a w×h image in format ("png", "jpeg", "gif") with the
// standard library's encoders; noise makes it incompressible.
func encode(t testing.TB, format string, w, h int, noise bool) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{uint8(x), uint8(y), 0x80, 0xff}
			if noise {
				c = color.RGBA{uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), 0xff}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	var err error
	switch format {
	case "png":
		enc := png.Encoder{}
		if noise { // it does not compress: spare the time
			enc.CompressionLevel = png.NoCompression
		}
		err = enc.Encode(&b, img)
	case "jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "gif":
		err = gif.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestCheckAccepts: each format the APIs take passes with its size and
// dimensions read from its header.
func TestCheckAccepts(t *testing.T) {
	for _, c := range []struct{ format, mime string }{{"png", "image/png"}, {"jpeg", "image/jpeg"}, {"gif", "image/gif"}} {
		raw := encode(t, c.format, 37, 21, false)
		img, err := Check(0, c.mime, b64(raw), 0)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		if img.MimeType != c.mime || img.Bytes != len(raw) || img.Width != 37 || img.Height != 21 {
			t.Errorf("%s: %+v, want %s %d bytes 37×21", c.format, img, c.mime, len(raw))
		}
	}
	// Parameters and case in the MIME type are the client's to choose.
	if _, err := Check(0, "Image/PNG; foo=bar", b64(encode(t, "png", 4, 4, false)), 0); err != nil {
		t.Errorf("image/png with a parameter: %v", err)
	}
	for name, raw := range webpSamples {
		img, err := Check(0, "image/webp", b64(raw.b), 0)
		if err != nil || img.Width != raw.w || img.Height != raw.h {
			t.Errorf("webp %s: %+v, %v; want %d×%d", name, img, err, raw.w, raw.h)
		}
	}
}

// TestCheckRetinaScreenshot: a 3 MB PNG, larger than the whole prompt
// limit of before, passes the default limits.
func TestCheckRetinaScreenshot(t *testing.T) {
	raw := encode(t, "png", 1280, 800, true)
	if len(raw) < 3_000_000 {
		t.Fatalf("the sample is only %d bytes", len(raw))
	}
	imgs, err := CheckPrompt([]Input{{"image/png", b64(raw)}}, Limits{})
	if err != nil || len(imgs) != 1 || imgs[0].Bytes != len(raw) {
		t.Fatalf("%d-byte PNG: %+v, %v", len(raw), imgs, err)
	}
}

// TestCheckRefuses: each problem gets its own error, which says what is
// wrong (and which setting, for a limit).
func TestCheckRefuses(t *testing.T) {
	png4 := encode(t, "png", 4, 4, false)
	good := b64(png4)
	cases := []struct {
		name, mime, data string
		max              int
		problem          Problem
		says             string
	}{
		{"bmp", "image/bmp", good, 0, ProblemMIMEType, `"image/bmp" is not an image type`},
		{"svg", "image/svg+xml", good, 0, ProblemMIMEType, "image/svg+xml"},
		{"no type", "", good, 0, ProblemMIMEType, "not valid"},
		{"text type", "text/plain", good, 0, ProblemMIMEType, "text/plain"},
		{"png as jpeg", "image/jpeg", good, 0, ProblemMismatch, "declared image/jpeg, but the bytes are a PNG image (send mimeType image/png)"},
		{"not an image", "image/png", b64([]byte("hello, world, not a picture")), 0, ProblemMismatch, "not a PNG, JPEG, GIF or WebP"},
		{"empty", "image/png", "", 0, ProblemBase64, "no data"},
		{"data URL", "image/png", "data:image/png;base64," + good, 0, ProblemBase64, "data: URL"},
		{"line break", "image/png", good[:8] + "\n" + good[8:], 0, ProblemBase64, "line break at byte 8"},
		{"CR", "image/png", good[:4] + "\r" + good[4:], 0, ProblemBase64, "line break at byte 4"},
		{"URL alphabet", "image/png", strings.NewReplacer("+", "-", "/", "_").Replace(b64(append(png4, 0xfb, 0xff))), 0, ProblemBase64, "not valid base64"},
		{"no padding", "image/png", strings.TrimRight(b64(append(png4, 1)), "="), 0, ProblemBase64, "not valid base64"},
		{"space", "image/png", good[:12] + " " + good[12:], 0, ProblemBase64, `not valid base64 (" " at byte 12)`},
		{"too large", "image/png", good, len(png4) - 1, ProblemTooLarge, "limits.image_bytes"},
	}
	for _, c := range cases {
		_, err := Check(2, c.mime, c.data, c.max)
		var e *Error
		if !errors.As(err, &e) || e.Problem != c.problem || !strings.Contains(err.Error(), c.says) || !strings.HasPrefix(err.Error(), "Image 3") {
			t.Errorf("%s: %v; want %s saying %q", c.name, err, c.problem, c.says)
		}
	}
	// A bad byte far into a large image is found where it is (the
	// stream's own error counts from its last chunk).
	big := b64(encode(t, "png", 300, 300, true))
	if _, err := Check(0, "image/png", big[:100000]+"*"+big[100001:], 0); err == nil || !strings.Contains(err.Error(), `"*" at byte 100000`) {
		t.Errorf("a bad byte at 100000: %v", err)
	}
	// Exactly the limit passes.
	if _, err := Check(0, "image/png", good, len(png4)); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	// Strict decoding: a final quantum with non-zero unused bits ("Ab=="
	// rather than "AQ==") is refused; lenient decoding takes both.
	one := b64(append(append([]byte(nil), png4...), 1)) // ends in "AQ==" or similar
	bad := one[:len(one)-3] + "R=="                     // same byte, a stray low bit set
	if _, err := base64.StdEncoding.DecodeString(bad); err != nil {
		t.Fatalf("the sample is not lenient-valid: %v", err)
	}
	if _, err := Check(0, "image/png", bad, 0); err == nil {
		t.Error("non-canonical padding bits accepted")
	}
}

// TestCheckPromptTotal: images each within their limit may still pass the
// prompt's total, which is refused as a whole.
func TestCheckPromptTotal(t *testing.T) {
	raw := encode(t, "png", 64, 64, true)
	in := []Input{{"image/png", b64(raw)}, {"image/png", b64(raw)}, {"image/png", b64(raw)}}
	l := Limits{ImageBytes: len(raw), PromptImageBytes: 2*len(raw) + 1}
	_, err := CheckPrompt(in, l)
	var e *Error
	if !errors.As(err, &e) || e.Problem != ProblemTotal || e.Size != 3*len(raw) || !strings.Contains(err.Error(), "limits.prompt_image_bytes") {
		t.Fatalf("three images over the total: %v", err)
	}
	if imgs, err := CheckPrompt(in[:2], l); err != nil || len(imgs) != 2 {
		t.Fatalf("two images within it: %v", err)
	}
	// The first bad image is named.
	in[1].MimeType = "image/gif"
	if _, err := CheckPrompt(in, Limits{}); !errors.As(err, &e) || e.Index != 1 || e.Problem != ProblemMismatch {
		t.Fatalf("a mislabelled second image: %v", err)
	}
}

// TestLineBytes: the line holds the image budget in base64 plus the text
// limit, JSON-escaped at worst, and stays bounded.
func TestLineBytes(t *testing.T) {
	n := LineBytes(1<<20, DefaultMaxPromptImageBytes)
	if min := base64.StdEncoding.EncodedLen(DefaultMaxPromptImageBytes) + 6<<20; n < min {
		t.Fatalf("LineBytes = %d, less than the %d the budget needs", n, min)
	}
	if n > 80<<20 {
		t.Fatalf("LineBytes = %d: more than 80 MiB for the default limits", n)
	}
	if LineBytes(1<<20, 100<<20) <= n {
		t.Fatal("a larger image budget does not make room")
	}
}
