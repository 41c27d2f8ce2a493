package tool

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadImage: read_file of an image, whatever its name, gives a model
// that reads images the image (and what it is), any other model what it
// is and that it cannot see it; one over the limit is described, not sent.
func TestReadImage(t *testing.T) {
	root := t.TempDir()
	var b bytes.Buffer
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, 64, 48), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	b.Write(make([]byte, 3000)) // past the encoder's few bytes
	if err := os.WriteFile(filepath.Join(root, "logo.dat"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(env *Env) Result {
		t.Helper()
		env.Roots = ResolveRoots([]string{root})
		act, err := readFile{}.Prepare(env, []byte(`{"path":"logo.dat"}`))
		if err != nil {
			t.Fatal(err)
		}
		return act.Run(context.Background(), nil)
	}
	const what = "logo.dat is a GIF image, "
	res := read(&Env{Images: true})
	if res.Image == nil || res.Image.MimeType != "image/gif" || res.Image.Data != base64.StdEncoding.EncodeToString(b.Bytes()) ||
		!strings.HasPrefix(res.Output, what) || !strings.Contains(res.Output, "64×48 pixels") {
		t.Errorf("vision model: %q, image %v", res.Output, res.Image != nil)
	}
	res = read(&Env{})
	if res.Image != nil || !strings.Contains(res.Output, "64×48 pixels. The current model cannot see images") {
		t.Errorf("text-only model: %q, image %v", res.Output, res.Image != nil)
	}
	res = read(&Env{Images: true, ImageBytes: 1024})
	if res.Image != nil || !strings.Contains(res.Output, "more than the 1.0 KB an image may be") {
		t.Errorf("over the limit: %q, image %v", res.Output, res.Image != nil)
	}
}
