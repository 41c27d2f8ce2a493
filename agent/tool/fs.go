package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/crow-acp/crow-acp/acp"
)

// maxFileBytes bounds a file read from disk in one piece.
const maxFileBytes = 16 << 20

// errNotExist is returned (wrapped) when a file does not exist.
var errNotExist = fs.ErrNotExist

// readText returns the whole text of a file: through the client when it
// offered fs/read_text_file (so unsaved editor buffers are seen), else from
// disk.
func (e *Env) readText(ctx context.Context, p Path) (string, error) {
	if e.ClientRead && e.Client != nil {
		// The client may not tell a missing file apart; check the disk too.
		if _, err := os.Stat(p.Abs); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w", p.Display, errNotExist)
		}
		res, err := e.Client.ReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: e.SessionID, Path: p.Abs})
		if err != nil {
			return "", fmt.Errorf("the editor could not read %s: %v", p.Display, err)
		}
		return res.Content, nil
	}
	return readDisk(p)
}

func readDisk(p Path) (string, error) {
	fi, err := statFile(p.Abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", p.Display, errNotExist)
	}
	if err != nil {
		return "", err
	}
	if fi.Size() > maxFileBytes {
		return "", fmt.Errorf("%s is %d bytes, too large to read whole (limit %d)", p.Display, fi.Size(), maxFileBytes)
	}
	b, err := os.ReadFile(p.Abs)
	if err != nil {
		return "", err
	}
	if isBinary(b) {
		return "", fmt.Errorf("%s is a binary file", p.Display)
	}
	return string(b), nil
}

// writeText writes a whole file: through the client when it offered
// fs/write_text_file (the editor sees the change at once), else to disk,
// creating parent directories and keeping an existing file's mode.
func (e *Env) writeText(ctx context.Context, p Path, content string) error {
	if e.ClientWrite && e.Client != nil {
		if _, err := e.Client.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: e.SessionID, Path: p.Abs, Content: content}); err != nil {
			return fmt.Errorf("the editor could not write %s: %v", p.Display, err)
		}
		return nil
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(p.Abs); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", p.Display)
		}
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(p.Abs), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p.Abs, []byte(content), mode)
}

// isBinary guesses like git does: a NUL byte early on.
func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}
