package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/crow-acp/crow-acp/acp"
)

// maxFileBytes bounds a file read from disk in one piece.
const maxFileBytes = 16 << 20

// errNotExist is returned (wrapped) when a file does not exist.
var errNotExist = fs.ErrNotExist

// clientServes reports whether the client's fs/* methods reach p: it
// offered them and p is in one of its roots (clients serve nothing else;
// a path outside, allowed by the user, is read and written on disk, as
// Zed's own agents do).
func (e *Env) clientServes(offered bool, p Path) bool {
	return offered && e.Client != nil && p.Client != ""
}

// readText returns the whole text of a file: through the client when it
// serves the file (so unsaved editor buffers are seen), else from disk.
func (e *Env) readText(ctx context.Context, p Path) (string, error) {
	if e.clientServes(e.ClientRead, p) {
		// The client may not tell a missing file apart, and would read a
		// FIFO or a device: check the disk first.
		if _, err := statRegular(p); err != nil {
			return "", diskError(p, err)
		}
		res, err := e.Client.ReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: e.SessionID, Path: p.Client})
		if err != nil {
			return "", fmt.Errorf("the editor could not read %s: %v", p.Display, err)
		}
		return res.Content, nil
	}
	return readDisk(p)
}

func readDisk(p Path) (string, error) {
	b, err := readRegular(p, maxFileBytes)
	if err != nil {
		return "", diskError(p, err)
	}
	if isBinary(b) {
		return "", fmt.Errorf("%s is a binary file", p.Display)
	}
	return string(b), nil
}

// diskError names a missing file with errNotExist (a write may create it).
func diskError(p Path, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", p.Display, errNotExist)
	}
	return err
}

// writeText writes a whole file: through the client when it serves the
// file (the editor sees the change at once), else to disk
// (writeRegular: beneath the held root, through a temporary file renamed
// over the old one, keeping its mode).
// Nothing is written once ctx is done: a cancelled turn's answer may
// already be sent, and the user may be editing the file again.
func (e *Env) writeText(ctx context.Context, p Path, content string) error {
	return e.writeTextMode(ctx, p, content, 0)
}

// writeTextMode is writeText that gives a file it creates the permission
// bits mode (0: the default); an existing file keeps its own.
func (e *Env) writeTextMode(ctx context.Context, p Path, content string, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not written: %w", err)
	}
	if err := e.beforeChange(ctx, p); err != nil {
		return err
	}
	err := e.writeTo(ctx, p, content, mode)
	if err == nil {
		e.afterChange(ctx, p)
	}
	return err
}

func (e *Env) writeTo(ctx context.Context, p Path, content string, mode fs.FileMode) error {
	if e.clientServes(e.ClientWrite, p) {
		if _, err := e.Client.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: e.SessionID, Path: p.Client, Content: content}); err != nil {
			return fmt.Errorf("the editor could not write %s: %v", p.Display, err)
		}
		if mode != 0 {
			return chmodRegular(p, mode)
		}
		return nil
	}
	return writeRegular(p, []byte(content), mode)
}

// isBinary guesses like git does: a NUL byte early on.
func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}

func notFound(p Path, err error) string {
	if errors.Is(err, errNotExist) {
		return fmt.Sprintf("file not found: %s", p.Display)
	}
	return err.Error()
}
