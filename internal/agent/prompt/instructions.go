package prompt

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Names are the project instruction files, by preference: in each folder
// the first one present is read (AGENTS.md, else the file a peer agent
// reads). At the repository root CopilotName is the last fallback.
var Names = []string{"AGENTS.md", "CLAUDE.md", "GEMINI.md", "CRUSH.md"}

// CopilotName is GitHub Copilot's instruction file, read at the root only.
const CopilotName = ".github/copilot-instructions.md"

// Instruction is one project instruction file as the model sees it.
type Instruction struct {
	Path      string // slash-separated, relative to the repository root
	Text      string // what was kept of it
	Size      int64  // the file's size in bytes
	Truncated bool   // Text is only the start: the budget ran out
	Omitted   bool   // nothing was kept: the budget was used up before
}

// Section is the file as placed in the prompt or a tool result.
func (in Instruction) Section() string {
	if in.Omitted {
		return fmt.Sprintf("Instructions in %s were not loaded: the size limit for instruction files is used up. Read the file if it matters for the task.\n", in.Path)
	}
	s := "Instructions from " + in.Path + ":\n" + strings.TrimRight(in.Text, "\n") + "\n"
	if in.Truncated {
		s += fmt.Sprintf("[truncated: %d of %d bytes shown; read %s for the rest]\n", len(in.Text), in.Size, in.Path)
	}
	return s
}

// Loader finds and reads the instruction files of one session, from the
// repository root (or the session directory outside a repository) down to
// the session directory, and later those of folders below it as the model
// touches them. Files are opened beneath the root with os.Root, so a link
// pointing out of it is never followed. All files of the session share
// one byte budget. A Loader is not safe for concurrent use.
type Loader struct {
	base   string // absolute: the repository root or the session directory
	cwd    string // the session directory, relative to base ("." = base)
	real   string // the session directory with links resolved ("" = same)
	budget int    // bytes left
	seen   map[string]bool
}

// NewLoader is the loader of a session in directory cwd with budget bytes.
func NewLoader(cwd string, budget int) *Loader {
	cwd = filepath.Clean(cwd)
	base := GitRoot(cwd)
	if base == "" {
		base = cwd
	}
	rel, err := filepath.Rel(base, cwd)
	if err != nil {
		base, rel = cwd, "."
	}
	l := &Loader{base: base, cwd: filepath.ToSlash(rel), budget: budget, seen: make(map[string]bool)}
	if r, err := filepath.EvalSymlinks(cwd); err == nil && r != cwd {
		l.real = r
	}
	return l
}

// Initial reads the files from the root down to the session directory.
func (l *Loader) Initial() []Instruction {
	dirs := []string{"."}
	if l.cwd != "." {
		parts := strings.Split(l.cwd, "/")
		for i := range parts {
			dirs = append(dirs, path.Join(parts[:i+1]...))
		}
	}
	return l.load(dirs)
}

// Nested reads the files of the folders between the session directory
// (excluded) and p (a file, or a folder, as a tool named it) that were not
// looked at yet. p outside the session directory loads nothing.
func (l *Loader) Nested(p string) []Instruction {
	rel, ok := l.below(p)
	if !ok {
		return nil
	}
	root, err := os.OpenRoot(l.base)
	if err != nil {
		return nil
	}
	defer root.Close()
	// A file's folder, or the folder itself.
	if fi, err := root.Stat(path.Join(l.cwd, rel)); err != nil || !fi.IsDir() {
		rel = path.Dir(rel)
	}
	if rel == "." {
		return nil
	}
	var dirs []string
	parts := strings.Split(rel, "/")
	for i := range parts {
		dirs = append(dirs, path.Join(l.cwd, path.Join(parts[:i+1]...)))
	}
	return l.load(dirs)
}

// Reload reads again files loaded in an earlier process (by Path), so a
// restarted session keeps them and does not announce them again.
func (l *Loader) Reload(paths []string) []Instruction {
	var out []Instruction
	for _, p := range paths {
		dir := path.Dir(p)
		if l.seen[dir] || !l.isNested(dir) {
			continue
		}
		l.seen[dir] = true
		if in, ok := l.read(p); ok {
			out = append(out, in)
		}
	}
	return out
}

// isNested: dir (relative to base) lies below the session directory.
func (l *Loader) isNested(dir string) bool {
	if l.cwd == "." {
		return dir != "." && !strings.HasPrefix(dir, "../")
	}
	return strings.HasPrefix(dir, l.cwd+"/")
}

// below is p relative to the session directory, when it lies below it.
func (l *Loader) below(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	cwd := filepath.Join(l.base, filepath.FromSlash(l.cwd))
	for _, dir := range []string{cwd, l.real} {
		if dir == "" {
			continue
		}
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, p)
		}
		rel, err := filepath.Rel(dir, filepath.Clean(abs))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		return filepath.ToSlash(rel), true
	}
	return "", false
}

// load reads the first instruction file of each folder not seen yet.
func (l *Loader) load(dirs []string) []Instruction {
	var out []Instruction
	for _, dir := range dirs {
		if l.seen[dir] {
			continue
		}
		l.seen[dir] = true
		names := Names
		if dir == "." {
			names = append(names[:len(names):len(names)], CopilotName)
		}
		for _, n := range names {
			if in, ok := l.read(path.Join(dir, n)); ok {
				out = append(out, in)
				break
			}
		}
	}
	return out
}

// read reads one file beneath the root within the budget; ok is false
// when there is no such regular file (or it cannot be read).
func (l *Loader) read(name string) (Instruction, bool) {
	root, err := os.OpenRoot(l.base)
	if err != nil {
		return Instruction{}, false
	}
	defer root.Close()
	f, fi, err := openRegular(root, name)
	if err != nil {
		return Instruction{}, false
	}
	defer f.Close()
	if fi.Size() == 0 {
		return Instruction{}, false
	}
	in := Instruction{Path: name, Size: fi.Size()}
	if l.budget <= 0 {
		in.Omitted = true
		return in, true
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(l.budget)+1))
	if err != nil && !errors.Is(err, fs.ErrClosed) {
		return Instruction{}, false
	}
	if len(data) > l.budget {
		data = data[:l.budget]
		// Not in the middle of a character.
		for i := 0; i < utf8.UTFMax-1 && len(data) > 0; i++ {
			if r, size := utf8.DecodeLastRune(data); r != utf8.RuneError || size != 1 {
				break
			}
			data = data[:len(data)-1]
		}
		in.Truncated = true
	}
	if int64(len(data)) < in.Size {
		in.Truncated = true
	}
	in.Text = strings.ToValidUTF8(string(data), "?") // no longer than data
	l.budget -= len(data)
	return in, true
}

// errNotRegular refuses a FIFO, socket, device or folder as an instruction
// file.
var errNotRegular = errors.New("not a regular file")

// openRegular opens name beneath root for reading when it is a regular
// file (a link to one inside root included). Anything else is refused
// before it is opened: the open of a FIFO with no writer waits forever
// (on the request path, stalling every session), a device's open may act.
// The open itself does not wait (O_NONBLOCK) and is checked again, for a
// file swapped in after the first look.
func openRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	if fi, err := root.Stat(name); err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, nil, errNotRegular
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
