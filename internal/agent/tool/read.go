package tool

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
	"github.com/crow-acp/crow-acp/internal/provider"
)

type readFile struct{}

func (readFile) Definition() provider.Tool {
	return provider.Tool{
		Name:        "read_file",
		Description: "Read a text file, optionally a range of lines. Each line comes prefixed with its number and a tab (not part of the file).",
		Parameters: object(props{
			"path":   str("File path, relative to the project root"),
			"offset": integer("First line to read, 1-based"),
			"limit":  integer("Number of lines (default 400)"),
		}, "path"),
	}
}

type readArgs struct {
	Path     string `json:"path"`
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
	// The range as other agents' tools name it (inclusive lines).
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
}

func (readFile) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	p, err := env.Resolve(cmp.Or(a.Path, a.FilePath))
	if err != nil {
		return nil, err
	}
	if a.Offset < 1 {
		a.Offset = a.StartLine
	}
	if a.Limit <= 0 && a.EndLine > 0 {
		if a.Limit = a.EndLine - max(a.Offset, 1) + 1; a.Limit <= 0 {
			return nil, fmt.Errorf("end_line %d is before the first line %d", a.EndLine, max(a.Offset, 1))
		}
	}
	a.Offset, a.Limit = lineWindow(a.Offset, a.Limit)
	title := "Read " + p.Display
	if a.Offset > 1 || a.Limit != defaultReadLines {
		title += fmt.Sprintf(" (lines %d-%d)", a.Offset, a.Offset+a.Limit-1)
	}
	return &Action{
		Title: title, Kind: acp.ToolKindRead, Locations: locate(p, a.Offset),
		Access: AccessRead, Outside: outside(p), PermissionKey: "read", AlwaysAsk: protectedRead(p),
		Run: func(ctx context.Context, _ func([]acp.ToolCallContent)) Result {
			if res, ok := readImage(env, p); ok {
				return res
			}
			return readRange(ctx, env, p, a.Offset, a.Limit)
		},
	}, nil
}

func readRange(ctx context.Context, env *Env, p Path, offset, limit int) Result {
	var (
		lines []string
		more  bool
		total = -1
	)
	if env.clientServes(env.ClientRead, p) {
		if _, err := statRegular(p); err != nil {
			return Failure("%s", notFound(p, diskError(p, err)))
		}
		// One line more than asked tells whether the file goes on.
		res, err := env.Client.ReadTextFile(ctx, &acp.ReadTextFileRequest{
			SessionID: env.SessionID, Path: p.Client, Line: ptr(offset), Limit: ptr(limit + 1)})
		if err != nil {
			return Failure("the editor could not read %s: %v", p.Display, err)
		}
		lines = splitLines(res.Content)
		if len(lines) > limit {
			lines, more = lines[:limit], true
		}
		if offset == 1 && !more {
			env.Reads.saw(p.Abs, res.Content)
		} else {
			env.Reads.sawPart(p.Abs)
		}
	} else {
		text, err := readDisk(p)
		if err != nil {
			return Failure("%s", notFound(p, err))
		}
		env.Reads.saw(p.Abs, text)
		all := splitLines(text)
		total = len(all)
		if offset > total && total > 0 {
			return Failure("%s has %d lines; offset %d is past the end", p.Display, total, offset)
		}
		end := min(offset-1+limit, total)
		lines = all[min(offset-1, total):end]
		more = end < total
	}
	// Keep within the output limit, at a line boundary.
	size, n := 0, 0
	for n < len(lines) && (env.OutputLimit <= 0 || size+len(lines[n])+8 <= env.OutputLimit || n == 0) {
		size += len(lines[n]) + 8
		n++
	}
	if n < len(lines) {
		lines, more = lines[:n], true
	}
	out := numbered(lines, offset)
	if n == 1 && env.OutputLimit > 0 && len(out) > env.OutputLimit {
		out = out[:env.OutputLimit] + "…\n"
	}
	if more {
		next := offset + len(lines)
		if total >= 0 {
			out += fmt.Sprintf("\n[lines %d-%d of %d; call read_file with offset=%d to continue]", offset, next-1, total, next)
		} else {
			out += fmt.Sprintf("\n[lines %d-%d; more follow: call read_file with offset=%d to continue]", offset, next-1, next)
		}
	}
	if out == "" {
		out = "[empty file]"
	}
	return Result{Output: out, Content: []acp.ToolCallContent{acp.ToolText(fenced(p.Display, strings.Join(lines, "")))}}
}

// numbered prefixes each line with its number, right-aligned, and a tab
// (cat -n style), so the model can cite path:line; edit_file strips these
// prefixes when a model copies them into old_string.
func numbered(lines []string, first int) string {
	var b strings.Builder
	w := len(fmt.Sprint(first + len(lines) - 1))
	for i, l := range lines {
		fmt.Fprintf(&b, "%*d\t%s", w, first+i, l)
	}
	return b.String()
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
