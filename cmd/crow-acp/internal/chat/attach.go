package chat

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/gitignore"
)

// Bounds of what @path attaches: a text file is embedded whole up to
// maxAttachText (a larger one is refused: the model would get a cut file
// it cannot tell is cut), an image up to maxAttachImage, and at most
// maxAttachments files in one prompt. Completion lists at most
// maxCompletions names of a directory, read from its first maxDirEntries.
const (
	maxAttachText   = 256 << 10
	maxAttachImage  = 20 << 20
	maxAttachments  = 20
	maxCompletions  = 200
	maxDirEntries   = 5000
	sniffBytes      = 512
	mentionTrailing = ",.;:!?)]}'\""
)

// attachableImages are the image types a prompt may carry, recognised by
// their bytes, not their name.
var attachableImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// mention is an @path in a prompt: where it is and the path written.
type mention struct {
	at   int // byte offset of the "@"
	path string
}

// mentions are the @words of text: an "@" at the start or after
// whitespace, up to the next whitespace.
func mentions(text string) []mention {
	var out []mention
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && !isSpace(text[i-1])) {
			continue
		}
		j := i + 1
		for j < len(text) && !isSpace(text[j]) {
			j++
		}
		if j > i+1 {
			out = append(out, mention{at: i, path: text[i+1 : j]})
		}
		i = j
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// attachments turns the @paths of text that name files of the project
// into content blocks: an embedded resource for a text file, an image
// block for a PNG, JPEG, GIF or WebP. An @word that names nothing stays
// text (notes say so); a path outside the project, a binary or oversize
// file is an error, and nothing is sent.
func attachments(cwd, text string) (blocks []acp.ContentBlock, notes []string, err error) {
	ms := mentions(text)
	if len(ms) == 0 {
		return nil, nil, nil
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return nil, nil, fmt.Errorf("open the project directory: %w", err)
	}
	defer root.Close()
	seen := map[string]bool{}
	for _, m := range ms {
		rel, err := projectPath(cwd, m.path)
		if err != nil {
			return nil, nil, err
		}
		if _, statErr := root.Stat(rel); errors.Is(statErr, fs.ErrNotExist) {
			// "see @main.go," names main.go.
			if t := strings.TrimRight(rel, mentionTrailing); t != rel && t != "" {
				if _, e := root.Stat(t); e == nil {
					rel = t
				}
			}
		}
		if seen[rel] {
			continue
		}
		b, err := attachFile(root, cwd, rel)
		if errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, fmt.Sprintf("@%s names no file in the project: sent as text", m.path))
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		seen[rel] = true
		if len(seen) > maxAttachments {
			return nil, nil, fmt.Errorf("more than %d files attached: attach fewer", maxAttachments)
		}
		blocks = append(blocks, b)
	}
	return blocks, notes, nil
}

// projectPath is p as a slash path beneath cwd; a path that leaves it is
// refused (os.Root refuses a symbolic link that does, too).
func projectPath(cwd, p string) (string, error) {
	if strings.HasPrefix(p, "~") {
		return "", fmt.Errorf("@%s: only files inside the project (%s) can be attached", p, cwd)
	}
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(cwd, p)
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return "", fmt.Errorf("@%s: only files inside the project (%s) can be attached", p, cwd)
		}
		p = r
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("@%s: only files inside the project (%s) can be attached", p, cwd)
	}
	return clean, nil
}

// attachFile reads one file beneath root into a content block.
func attachFile(root *os.Root, cwd, rel string) (acp.ContentBlock, error) {
	fi, err := root.Stat(rel)
	if err != nil {
		var pe *fs.PathError
		if errors.Is(err, fs.ErrNotExist) {
			return acp.ContentBlock{}, err
		}
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
			return acp.ContentBlock{}, fmt.Errorf("@%s: only files inside the project (%s) can be attached", rel, cwd)
		}
		return acp.ContentBlock{}, fmt.Errorf("@%s: %w", rel, err)
	}
	if fi.IsDir() {
		return acp.ContentBlock{}, fmt.Errorf("@%s is a directory: attach the files in it", rel)
	}
	if !fi.Mode().IsRegular() {
		return acp.ContentBlock{}, fmt.Errorf("@%s is not a regular file", rel)
	}
	// O_NONBLOCK: a FIFO put in its place since the Stat does not block.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return acp.ContentBlock{}, fmt.Errorf("@%s: %w", rel, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return acp.ContentBlock{}, fmt.Errorf("@%s is not a regular file", rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAttachImage+1))
	if err != nil {
		return acp.ContentBlock{}, fmt.Errorf("@%s: %w", rel, err)
	}
	uri := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(cwd, filepath.FromSlash(rel)))}).String()
	mime := http.DetectContentType(data[:min(len(data), sniffBytes)])
	if attachableImages[mime] {
		if len(data) > maxAttachImage {
			return acp.ContentBlock{}, fmt.Errorf("@%s: the image is over %d MB: attach a smaller one", rel, maxAttachImage>>20)
		}
		return acp.ContentBlock{Image: &acp.ImageContent{Data: base64.StdEncoding.EncodeToString(data), MimeType: mime, URI: uri}}, nil
	}
	if !utf8.Valid(data) || strings.ContainsRune(string(data), 0) {
		return acp.ContentBlock{}, fmt.Errorf("@%s is a binary file: only text files and PNG, JPEG, GIF or WebP images can be attached", rel)
	}
	if len(data) > maxAttachText {
		return acp.ContentBlock{}, fmt.Errorf("@%s is %s, over the %d KiB a text file may have to be attached: point the model at it by name instead",
			rel, transcript.Plural(len(data), "byte"), maxAttachText>>10)
	}
	text := string(data)
	return acp.ContentBlock{Resource: &acp.EmbeddedResource{Resource: acp.EmbeddedResourceContents{URI: uri, MimeType: "text/plain", Text: &text}}}, nil
}

// completePaths lists the names completing typed (a slash path relative to
// cwd) that .gitignore does not hide: directories end with "/". Hidden
// names are offered when typed starts them with a dot.
func completePaths(cwd, typed string) []string {
	if strings.HasPrefix(typed, "/") || strings.HasPrefix(typed, "~") {
		return nil
	}
	dir, base := path.Split(typed)
	cleanDir := path.Clean("./" + dir)
	if cleanDir == ".." || strings.HasPrefix(cleanDir, "../") {
		return nil
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return nil
	}
	defer root.Close()
	f, err := root.Open(cleanDir)
	if err != nil {
		return nil
	}
	entries, _ := f.ReadDir(maxDirEntries)
	f.Close()
	ig := gitignore.New(root)
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			if fi, err := root.Stat(path.Join(cleanDir, name)); err == nil {
				isDir = fi.IsDir()
			} else {
				continue // it leaves the project, or points nowhere
			}
		}
		if ig.IgnoredPath(path.Join(cleanDir, name), isDir) {
			continue
		}
		if isDir {
			name += "/"
		}
		out = append(out, dir+name)
	}
	sort.Strings(out)
	if len(out) > maxCompletions {
		out = out[:maxCompletions]
	}
	return out
}
