// Package imagecheck checks the images of a prompt before anything is
// stored or sent: strict base64, a MIME type the model APIs take that
// matches the bytes, and sizes within their own limits, apart from the
// prompt's text limit. It also reads an image's width and height from its
// header, for the window's count.
//
// It knows nothing about the wire or the store: callers pass the MIME type
// and the base64 data of each image.
package imagecheck

import (
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"strings"
)

// Default limits. A Retina screenshot as PNG is 3 to 10 MB; the hosted APIs
// take 20 MB an image (OpenAI) or less, so a larger one would be refused by
// the model anyway. The total bounds what one prompt may hold in memory.
const (
	DefaultMaxImageBytes       = 20 << 20 // one image, decoded
	DefaultMaxPromptImageBytes = 50 << 20 // all images of one prompt, decoded
)

// Limits bound the images of one prompt, in decoded bytes.
type Limits struct {
	ImageBytes       int // one image; 0: DefaultMaxImageBytes
	PromptImageBytes int // all images of one prompt; 0: DefaultMaxPromptImageBytes
}

func (l Limits) withDefaults() Limits {
	if l.ImageBytes <= 0 {
		l.ImageBytes = DefaultMaxImageBytes
	}
	if l.PromptImageBytes <= 0 {
		l.PromptImageBytes = DefaultMaxPromptImageBytes
	}
	return l
}

// Formats are the image types the model APIs take (OpenAI, Anthropic,
// Gemini all accept these four), by MIME type.
var formats = map[string]string{
	"image/png":  "PNG",
	"image/jpeg": "JPEG",
	"image/gif":  "GIF",
	"image/webp": "WebP",
}

// Image is what Check learned about one valid image.
type Image struct {
	MimeType      string // canonical: image/png, image/jpeg, image/gif or image/webp
	Bytes         int    // decoded size
	Width, Height int    // 0 when the header does not tell
}

// Problem says what is wrong with an image; Error names the setting when a
// limit was passed.
type Problem string

const (
	ProblemBase64   Problem = "base64"    // the data is not strict standard base64
	ProblemMIMEType Problem = "mime_type" // a type the APIs do not take
	ProblemMismatch Problem = "mismatch"  // the bytes are another format than the MIME type says
	ProblemTooLarge Problem = "too_large" // over limits.image_bytes
	ProblemTotal    Problem = "total"     // the prompt's images are over limits.prompt_image_bytes
)

// Error is an image refused; the agent answers it with -32602 and stores
// nothing.
type Error struct {
	Index   int // 0-based index of the image among the prompt's images; -1 for the total
	Problem Problem
	Size    int // decoded bytes (too_large, total)
	Limit   int // the limit passed (too_large, total)
	Detail  string
}

func (e *Error) Error() string {
	which := fmt.Sprintf("Image %d", e.Index+1)
	switch e.Problem {
	case ProblemTooLarge:
		return fmt.Sprintf("%s is %s, more than the %s one image may be (setting limits.image_bytes, env CROW_MAX_IMAGE_BYTES); nothing was stored.",
			which, Size(e.Size), Size(e.Limit))
	case ProblemTotal:
		return fmt.Sprintf("The prompt's images are %s in all, more than the %s one prompt may hold (setting limits.prompt_image_bytes, env CROW_MAX_PROMPT_IMAGE_BYTES); nothing was stored.",
			Size(e.Size), Size(e.Limit))
	}
	return fmt.Sprintf("%s: %s; nothing was stored.", which, e.Detail)
}

// Size renders a byte count as "3.2 MB" (MiB, as the limits are set).
func Size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Check checks one image: mimeType is the declared type, data the base64
// of the bytes. It decodes in a stream, holding only the image's first
// 64 KiB, and stops at the first byte past maxBytes (0: the default).
// index only numbers the image in the error.
func Check(index int, mimeType, data string, maxBytes int) (Image, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxImageBytes
	}
	fail := func(p Problem, format string, args ...any) (Image, error) {
		return Image{}, &Error{Index: index, Problem: p, Detail: fmt.Sprintf(format, args...)}
	}
	mt, _, err := mime.ParseMediaType(mimeType)
	if err != nil {
		return fail(ProblemMIMEType, "the MIME type %q is not valid", clip(mimeType))
	}
	if _, ok := formats[mt]; !ok {
		return fail(ProblemMIMEType, "%q is not an image type the model APIs take (image/png, image/jpeg, image/gif, image/webp)", clip(mt))
	}
	if data == "" {
		return fail(ProblemBase64, "the image has no data")
	}
	if strings.HasPrefix(data, "data:") {
		return fail(ProblemBase64, "the data is a data: URL; send the base64 alone, with the type in mimeType")
	}
	// The standard decoder skips CR and LF even in strict mode: refuse
	// them, with anything else outside the alphabet.
	if i := strings.IndexAny(data, "\r\n"); i >= 0 {
		return fail(ProblemBase64, "the data is not valid base64 (a line break at byte %d)", i)
	}
	// The decoded size is known from the length: refuse an oversize image
	// before decoding any of it.
	if n := base64.StdEncoding.DecodedLen(len(data)) - padding(data); n > maxBytes {
		return Image{}, &Error{Index: index, Problem: ProblemTooLarge, Size: n, Limit: maxBytes}
	}
	dec := base64.NewDecoder(base64.StdEncoding.Strict(), strings.NewReader(data))
	var head headWriter
	n, err := io.Copy(&head, dec)
	if err != nil {
		// The stream's error counts from its last chunk: find the byte.
		if i := strings.IndexFunc(data, notBase64); i >= 0 {
			return fail(ProblemBase64, "the data is not valid base64 (%q at byte %d)", data[i:i+1], i)
		}
		return fail(ProblemBase64, "the data is not valid base64 (its length or padding: %d characters)", len(data))
	}
	got := Sniff(head.b)
	if got == "" {
		return fail(ProblemMismatch, "declared %s, but the bytes are not a PNG, JPEG, GIF or WebP image", mt)
	}
	if got != mt {
		return fail(ProblemMismatch, "declared %s, but the bytes are a %s image (send mimeType %s)", mt, formats[got], got)
	}
	img := Image{MimeType: mt, Bytes: int(n)}
	img.Width, img.Height = Dimensions(head.b)
	return img, nil
}

// Input is one image of a prompt, as the client sent it.
type Input struct {
	MimeType string
	Data     string // base64
}

// CheckPrompt checks every image of one prompt and their total. The first
// problem found is returned as an *Error.
func CheckPrompt(images []Input, l Limits) ([]Image, error) {
	l = l.withDefaults()
	out := make([]Image, 0, len(images))
	total := 0
	for i, in := range images {
		img, err := Check(i, in.MimeType, in.Data, l.ImageBytes)
		if err != nil {
			return nil, err
		}
		total += img.Bytes
		if total > l.PromptImageBytes {
			return nil, &Error{Index: -1, Problem: ProblemTotal, Size: total, Limit: l.PromptImageBytes}
		}
		out = append(out, img)
	}
	return out, nil
}

// LineBytes is the longest JSON-RPC line a prompt within the limits needs:
// its images in base64, its text JSON-escaped at worst (six bytes for
// "\u0000"), and 1 MiB for the envelope (ids, types, URIs, _meta).
func LineBytes(promptTextBytes, promptImageBytes int) int {
	return base64.StdEncoding.EncodedLen(promptImageBytes) + 6*promptTextBytes + 1<<20
}

// notBase64 is a rune outside the standard alphabet and its padding.
func notBase64(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=')
}

// padding counts the trailing '=' of data (at most two count).
func padding(data string) int {
	n := 0
	for n < 2 && len(data) > n && data[len(data)-1-n] == '=' {
		n++
	}
	return n
}

// clip keeps a client's string short in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// headWriter keeps the first headerBytes written and counts the rest.
type headWriter struct{ b []byte }

func (w *headWriter) Write(p []byte) (int, error) {
	if room := headerBytes - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
