package imagecheck

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
)

// headerBytes is how much of an image's start is kept to read its format
// and size: a JPEG's frame header follows its EXIF and ICC segments, which
// are rarely over 64 KiB.
const headerBytes = 64 << 10

// Sniff names the format of an image's first bytes by its magic number:
// "image/png", "image/jpeg", "image/gif", "image/webp", or "".
func Sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// maxDimension bounds a believable side, in pixels: the formats allow up
// to 2^31 (PNG) or 2^24 (WebP), and a header may say anything.
const maxDimension = 1 << 16

// Dimensions reads an image's width and height from its first bytes (its
// header), without decoding its pixels: PNG, JPEG and GIF through the
// standard library's DecodeConfig, WebP from its VP8, VP8L or VP8X chunk.
// 0, 0 when the header is cut short, broken, of another format, or names
// a side over 65,536 pixels.
func Dimensions(head []byte) (width, height int) {
	var cfg image.Config
	var err error
	switch Sniff(head) {
	case "image/png":
		cfg, err = png.DecodeConfig(bytes.NewReader(head))
	case "image/jpeg":
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(head))
	case "image/gif":
		cfg, err = gif.DecodeConfig(bytes.NewReader(head))
	case "image/webp":
		cfg.Width, cfg.Height = webpDimensions(head)
	default:
		return 0, 0
	}
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxDimension || cfg.Height > maxDimension {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}

// DimensionsBase64 is Dimensions of base64 image data as stored: it decodes
// only the first 64 KiB. 0, 0 when the data is not base64.
func DimensionsBase64(data string) (width, height int) {
	n := base64.StdEncoding.EncodedLen(headerBytes)
	if len(data) > n {
		data = data[:n] // a multiple of 4: whole quanta
	}
	if strings.ContainsAny(data, "\r\n") {
		return 0, 0
	}
	head, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return 0, 0
	}
	return Dimensions(head)
}

// webpDimensions reads the first chunk of a WebP file (RIFF size WEBP,
// then the chunk at byte 12), as the WebP container specification lays
// them out.
func webpDimensions(b []byte) (int, int) {
	if len(b) < 30 {
		return 0, 0
	}
	switch string(b[12:16]) {
	case "VP8X": // extended: 24-bit width-1 and height-1 at 24 and 27
		w := int(b[24]) | int(b[25])<<8 | int(b[26])<<16
		h := int(b[27]) | int(b[28])<<8 | int(b[29])<<16
		return w + 1, h + 1
	case "VP8L": // lossless: signature 0x2f, then 14-bit width-1 and height-1
		if b[20] != 0x2f {
			return 0, 0
		}
		v := binary.LittleEndian.Uint32(b[21:25])
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1
	case "VP8 ": // lossy: key frame start code 9d 01 2a, then 14-bit sides
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff)
	}
	return 0, 0
}
