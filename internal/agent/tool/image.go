package tool

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
)

// Image is an image a tool gives the model (read_file of a PNG, JPEG, GIF
// or WebP): the agent stores it with the result and sends it as an image
// part the chat APIs accept (a tool message carries text only).
type Image struct {
	MimeType string
	Data     string // base64
}

// imageHead is how much of a file read_file looks at to tell an image
// (imagecheck.Sniff) and its width and height.
const imageHead = 64 << 10

// readImage answers read_file for a file whose bytes are an image (by its
// magic number, whatever its name): a model that reads images gets it
// (up to Env.ImageBytes), any model its format, size and dimensions. ok is
// false for any other file (or one that cannot be opened: the text read
// says why).
func readImage(env *Env, p Path) (res Result, ok bool) {
	r, err := openRoot(p)
	if err != nil {
		return Result{}, false
	}
	defer r.Close()
	f, fi, err := openRegular(r, p, p.Rel)
	if err != nil {
		return Result{}, false
	}
	defer f.Close()
	head := make([]byte, imageHead)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	mt := imagecheck.Sniff(head)
	if mt == "" {
		return Result{}, false
	}
	format := strings.ToUpper(strings.TrimPrefix(mt, "image/"))
	what := fmt.Sprintf("%s is a %s image, %s", p.Display, format, imagecheck.Size(int(fi.Size())))
	if w, h := imagecheck.Dimensions(head); w > 0 {
		what += fmt.Sprintf(", %d×%d pixels", w, h)
	}
	limit := env.ImageBytes
	if limit <= 0 {
		limit = imagecheck.DefaultMaxImageBytes
	}
	text := func(s string) Result {
		return Result{Output: s, Content: []acp.ToolCallContent{acp.ToolText(s)}}
	}
	switch {
	case !env.Images:
		return text(what + ". The current model cannot see images: ask the user what it shows, or have them switch to a model that reads images."), true
	case fi.Size() > int64(limit):
		return text(fmt.Sprintf("%s: more than the %s an image may be (limits.image_bytes), so it is not sent.", what, imagecheck.Size(limit))), true
	}
	rest, err := io.ReadAll(io.LimitReader(f, int64(limit-len(head))+1))
	if err != nil || len(head)+len(rest) > limit {
		return text(fmt.Sprintf("%s, but it could not be read whole (%v).", what, err)), true
	}
	data := base64.StdEncoding.EncodeToString(append(head, rest...))
	res = text(what + ". The image follows in the next message.")
	res.Image = &Image{MimeType: mt, Data: data}
	return res, true
}
