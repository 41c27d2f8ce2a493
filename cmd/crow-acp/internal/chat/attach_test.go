package chat

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// png1x1 is a real 1x1 PNG.
var png1x1, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func project(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMentions: an @ starts a mention at the start of the text or after
// whitespace only (not in an e-mail address).
func TestMentions(t *testing.T) {
	got := mentions("@a.go see @dir/b.txt, mail me@example.com @ @x\n@y")
	var paths []string
	for _, m := range got {
		paths = append(paths, m.path)
	}
	if strings.Join(paths, " ") != "a.go dir/b.txt, x y" {
		t.Errorf("mentions: %q", paths)
	}
}

// TestAttachments: a text file is embedded as a resource with its file://
// URI, an image as an image block with the type its bytes say; an @word
// naming no file stays text; paths outside the project, binary and
// oversize files are refused with a message naming them.
func TestAttachments(t *testing.T) {
	big := bytes.Repeat([]byte("x"), maxAttachText+1)
	dir := project(t, map[string][]byte{
		"src/app.go": []byte("package app\n"),
		"shot.dat":   png1x1, // named wrongly: the bytes decide
		"blob.bin":   {0, 1, 2, 3},
		"big.txt":    big,
		"sub/x.txt":  []byte("x"),
		"../outside": []byte("no"),
	})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	blocks, notes, err := attachments(dir, "look at @src/app.go, and @shot.dat and @Override")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].Resource == nil || blocks[1].Image == nil {
		t.Fatalf("blocks: %+v", blocks)
	}
	r := blocks[0].Resource.Resource
	if r.URI != "file://"+filepath.ToSlash(filepath.Join(dir, "src/app.go")) || r.Text == nil || *r.Text != "package app\n" {
		t.Errorf("resource: %+v", r)
	}
	if img := blocks[1].Image; img.MimeType != "image/png" || img.Data != base64.StdEncoding.EncodeToString(png1x1) {
		t.Errorf("image: %s %d bytes", img.MimeType, len(img.Data))
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "@Override names no file") {
		t.Errorf("notes: %q", notes)
	}

	for _, tc := range []struct{ text, want string }{
		{"@../outside", "only files inside the project"},
		{"@" + filepath.Join(filepath.Dir(dir), "outside"), "only files inside the project"},
		{"@link", "only files inside the project"},
		{"@~/.ssh/id_rsa", "only files inside the project"},
		{"@blob.bin", "binary file"},
		{"@big.txt", "over the 256 KiB"},
		{"@sub", "is a directory"},
		{"@fifo", "not a regular file"},
	} {
		_, _, err := attachments(dir, "x "+tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.text, err, tc.want)
		}
	}
	if _, _, err := attachments(dir, strings.Repeat("@src/app.go ", 3)); err != nil {
		t.Errorf("the same file three times: %v", err)
	}
}

// TestCompletePaths: names beneath the project, .gitignore'd and hidden
// ones left out, directories ending with a slash; nothing above it.
func TestCompletePaths(t *testing.T) {
	dir := project(t, map[string][]byte{
		"src/app.go": nil, "src/api.go": nil, "src/gen/x.go": nil, "build/out": nil,
		".gitignore": []byte("build/\nsrc/api.go\n"), ".env": nil, "README.md": nil,
	})
	for _, tc := range []struct {
		typed string
		want  string
	}{
		{"", "README.md src/"},
		{"s", "src/"},
		{"src/", "src/app.go src/gen/"},
		{"src/a", "src/app.go"},
		{".", ".env .gitignore"},
		{"b", ""},
		{"../", ""},
		{"/etc/", ""},
	} {
		if got := strings.Join(completePaths(dir, tc.typed), " "); got != tc.want {
			t.Errorf("complete %q = %q, want %q", tc.typed, got, tc.want)
		}
	}
	comp := completer{paths: func(typed string) []string { return completePaths(dir, typed) }}
	cands, n := comp.Do([]rune("read @src/a"), 11)
	if len(cands) != 1 || string(cands[0]) != "pp.go " || n != 1 {
		t.Errorf("Do: %q %d", cands, n)
	}
}
