package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/acp"
)

// Env is what a tool may use while it runs in one session.
type Env struct {
	SessionID string
	// CallID is the id of the call being prepared (set per call; a
	// question or a subagent is tied to it).
	CallID string
	// Roots are the workspace directories, symlinks resolved: the session's
	// cwd first, then any additional directories. Paths inside them are
	// "inside"; everything else needs the user's permission.
	Roots []string
	// ClientRoots are the same roots as the client named them (index for
	// index): paths are shown to the client below these, never below a
	// root's resolved path, which the client may not know.
	ClientRoots []string
	// Protected are crow-acp's own files (configuration, credentials,
	// database, log; symlinks resolved, as ResolveRoots does): reading,
	// searching or writing them always asks, in every mode but bypass.
	// Writes under any .git directory and to a git directory's markers
	// (see gitMarker) always ask too.
	Protected []string
	Client    acp.Client
	// What the client offered in initialize; a method it did not offer is
	// never called.
	ClientRead, ClientWrite, ClientTerminal bool

	// ChildEnv is the environment commands run with (EnvPolicy.Environ);
	// nil = the default policy applied to crow-acp's own environment.
	ChildEnv []string

	CommandTimeout   time.Duration // default timeout of run_command
	CommandOutputCap int           // bytes of command output kept
	OutputLimit      int           // bytes of one result the model sees
	// Images: the session's model reads images (read_file then gives it
	// an image file as an image); ImageBytes bounds one (0: imagecheck's
	// default).
	Images     bool
	ImageBytes int
	// Reads is what the model has seen of the session's files (read_file,
	// write_file, edit_file); nil turns off the read-before-overwrite check.
	Reads *Reads
	// StoredOutput returns the full output of an earlier call of this
	// session (for read_output).
	StoredOutput func(ctx context.Context, callID string) (string, error)

	// Elicit asks the client with elicitation/create; nil when the client
	// did not advertise form elicitation (ask.go falls back).
	Elicit func(ctx context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error)
	// ElicitURL and CompleteElicitation pass an MCP server's URL
	// elicitations on; nil when the client did not advertise elicitation.url.
	ElicitURL           func(ctx context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error)
	CompleteElicitation func(ctx context.Context, n *acp.CompleteElicitationNotification) error
	// QuestionTimeout bounds an open question; 0 = DefaultQuestionTimeout.
	QuestionTimeout time.Duration
	// BeforeChange, when set, is called before a tool writes, creates or
	// deletes the file at p, while it still holds its old bytes (or is
	// absent): undo's checkpoint is stored first, so that no file changes
	// without one. An error leaves the file unchanged and fails the call.
	BeforeChange func(ctx context.Context, p Path) error
	// AfterChange, when set, is called once the tool changed the file at p
	// (undo compares it with what is there when asked to undo: a file
	// changed since by someone else is a conflict, not overwritten).
	AfterChange func(ctx context.Context, p Path)
}

// afterChange calls AfterChange if set.
func (e *Env) afterChange(ctx context.Context, p Path) {
	if e.AfterChange != nil {
		e.AfterChange(ctx, p)
	}
}

// beforeChange calls BeforeChange if set.
func (e *Env) beforeChange(ctx context.Context, p Path) error {
	if e.BeforeChange == nil {
		return nil
	}
	if err := e.BeforeChange(ctx, p); err != nil {
		return fmt.Errorf("%s was not changed: its checkpoint for undo could not be stored: %w", p.Display, err)
	}
	return nil
}

// clientPath names rel, below the root of index i, as the client does.
func (e *Env) clientPath(i int, rel string) string {
	if i >= len(e.ClientRoots) {
		return filepath.Join(e.Roots[i], rel)
	}
	return filepath.Join(e.ClientRoots[i], rel)
}

// Resolve resolves p (relative to the first root, or absolute). A path is
// inside only if its real location is: "..", absolute paths and symlinks
// pointing out of the workspace all count as outside.
func (e *Env) Resolve(p string) (Path, error) {
	if strings.TrimSpace(p) == "" {
		return Path{}, errors.New("path is required")
	}
	if strings.ContainsRune(p, 0) {
		return Path{}, errors.New("path contains a NUL byte")
	}
	if len(e.Roots) == 0 {
		return Path{}, errors.New("the session has no working directory")
	}
	if strings.HasPrefix(p, "~/") {
		return Path{}, fmt.Errorf("path %q: use an absolute path instead of ~", p)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(e.Roots[0], abs)
	}
	abs, err := realPath(filepath.Clean(abs))
	if err != nil {
		// Fail closed: a path whose links cannot be followed (too long, a
		// loop, no permission) cannot be proved inside.
		return Path{}, fmt.Errorf("path %q cannot be resolved: %w", p, err)
	}
	out := Path{Abs: abs, Display: abs, Root: "/", Rel: strings.TrimPrefix(filepath.ToSlash(abs), "/")}
	for i, r := range e.Roots {
		if rel, ok := within(r, abs); ok {
			if rel == "" {
				rel = "."
			}
			out = Path{Abs: abs, Display: rel, Inside: true, Root: r, Rel: filepath.ToSlash(rel), Client: e.clientPath(i, rel)}
			break
		}
	}
	if out.Rel == "" {
		out.Rel = "."
	}
	// A file with other hard links is as much outside as any of them.
	if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() && hardLinks(fi) > 1 {
		out.HardLinked, out.Inside = true, false
	}
	out.own = e.Protected
	out.Why, out.Own = e.protected(abs, out.Display)
	out.Protected = out.Why != ""
	return out, nil
}

// protected says why writing abs always asks, or "": it is under a .git
// directory (a written .git/config can run code on the next git command),
// a git directory's marker (gitMarker), or one of the Env.Protected files
// (own: crow-acp's configuration, credentials, database and log, which
// reads ask about too).
func (e *Env) protected(abs, display string) (why string, own bool) {
	if ownFile(e.Protected, abs) {
		return display + " is one of crow-acp's own files (configuration, credentials, database or log): reading it could send API keys to the model, writing it could change crow-acp's settings or keys.", true
	}
	for _, part := range strings.Split(filepath.ToSlash(abs), "/") {
		if strings.EqualFold(part, ".git") {
			return display + " is under .git/; writing it could run code on the next git command.", false
		}
	}
	return gitMarker(abs, display), false
}
