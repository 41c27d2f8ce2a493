package imagecheck

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// FuzzCheck: any MIME type and data are either refused with an *Error or
// accepted as what they are: strict base64 of an image of the declared
// type, within the limit.
func FuzzCheck(f *testing.F) {
	png := encode(f, "png", 3, 2, false)
	for _, s := range []struct{ mime, data string }{
		{"image/png", b64(png)},
		{"image/jpeg", b64(png)},
		{"image/png", b64(png[:20])},
		{"image/webp", b64(webpSamples["VP8X"].b)},
		{"image/gif", "R0lGODlhAQABAAAAACw="},
		{"image/png", "\x00\x01\x1b[2J\xff\xfe"},
		{"\x00image/png\xff", b64(png)},
		{"image/png", "iVBORw0KGgo=\n"},
		{"image/png", strings.Repeat("A", 1<<16)},
		{"image/png; a=\"\xff\"", "===="},
	} {
		f.Add(s.mime, s.data)
	}
	const limit = 1 << 12
	f.Fuzz(func(t *testing.T, mimeType, data string) {
		img, err := Check(0, mimeType, data, limit)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || err.Error() == "" {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		raw, derr := base64.StdEncoding.Strict().DecodeString(data)
		if derr != nil || strings.ContainsAny(data, "\r\n") {
			t.Fatalf("accepted data that is not strict base64: %v", derr)
		}
		if len(raw) != img.Bytes || img.Bytes > limit {
			t.Fatalf("size %d reported as %d (limit %d)", len(raw), img.Bytes, limit)
		}
		if Sniff(raw) != img.MimeType {
			t.Fatalf("accepted %s bytes as %s", Sniff(raw), img.MimeType)
		}
		if img.Width < 0 || img.Height < 0 || img.Width > maxDimension || img.Height > maxDimension {
			t.Fatalf("dimensions %d×%d", img.Width, img.Height)
		}
	})
}

// FuzzDimensions: any header gives a believable size or none.
func FuzzDimensions(f *testing.F) {
	for _, s := range webpSamples {
		f.Add(s.b)
	}
	f.Add(encode(f, "png", 3, 2, false))
	f.Add(encode(f, "jpeg", 3, 2, false))
	f.Add(encode(f, "gif", 3, 2, false))
	f.Add([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x1b[2J"))
	f.Add([]byte("GIF89a\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, head []byte) {
		w, h := Dimensions(head)
		if (w == 0) != (h == 0) || w < 0 || h < 0 || w > maxDimension || h > maxDimension {
			t.Fatalf("%d×%d", w, h)
		}
		w2, h2 := DimensionsBase64(b64(head))
		if len(head) <= headerBytes && (w2 != w || h2 != h) {
			t.Fatalf("through base64: %d×%d, directly %d×%d", w2, h2, w, h)
		}
	})
}
