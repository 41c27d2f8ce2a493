package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Defaults for run_command when Env leaves them zero.
const (
	DefaultCommandTimeout   = 2 * time.Minute
	DefaultCommandOutputCap = 1 << 20
	maxCommandTimeout       = 30 * time.Minute
	// cleanupTimeout bounds the terminal/kill, output and release calls made
	// after a command ended or was cancelled.
	cleanupTimeout = 5 * time.Second
	// displayLimit bounds the output shown in the client's tool call.
	displayLimit = 32 << 10
)

type runCommand struct{}

func (runCommand) Definition() provider.Tool {
	return provider.Tool{
		Name:        "run_command",
		Description: "Run a shell command (sh -c) in the project root. Returns exit code and output.",
		Parameters: object(props{
			"command": str("The command line, one string (an argv array also works)"),
			"timeout": integer("Timeout in seconds (default 120)"),
		}, "command"),
	}
}

type runArgs struct {
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
	// Workdir is the directory codex's shell tool takes with each command
	// (mostly the project root); not offered in the schema.
	Workdir string `json:"workdir"`
}

func (runCommand) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a runArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Command) == "" {
		return nil, errors.New("command is required")
	}
	if input, ok := shellPatch(a.Command); ok {
		return patchFromShell(env, input, a.Workdir)
	}
	if a.Workdir != "" {
		var err error
		if a.Command, err = inWorkdir(env, a.Command, a.Workdir); err != nil {
			return nil, err
		}
	}
	timeout := env.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, maxCommandTimeout)
	}
	line := parseCommandLine(env, a.Command)
	return &Action{
		Title: commandTitle(a.Command), Kind: acp.ToolKindExecute, Access: AccessExecute,
		CommandKeys: line.Keys, Commands: line.Commands, AlwaysAsk: line.Unsafe,
		Run: func(ctx context.Context, progress func([]acp.ToolCallContent)) Result {
			if env.ClientTerminal && env.Client != nil {
				return runInTerminal(ctx, env, a.Command, timeout, progress)
			}
			return runLocal(ctx, env, a.Command, timeout, progress)
		},
	}, nil
}

// inWorkdir is line run in workdir: "cd DIR && (LINE)", so the line shown,
// checked against the rules and run is one and the same. The project root
// needs no cd.
func inWorkdir(env *Env, line, workdir string) (string, error) {
	p, err := env.Resolve(workdir)
	if err != nil {
		return "", fmt.Errorf("workdir: %v", err)
	}
	if p.Abs == env.Roots[0] {
		return line, nil
	}
	dir := p.Abs
	if p.Inside && p.Root == env.Roots[0] {
		dir = p.Rel
	}
	q, err := QuoteArgv([]string{dir})
	if err != nil {
		return "", fmt.Errorf("workdir: %v", err)
	}
	// The newline ends a comment the line may end with.
	return "cd " + q + " && (" + line + "\n)", nil
}

// commandTitle is the title of a command's tool call: the command line
// itself, as Zed labels the embedded terminal with it (and its own agents
// title commands so). Only the first line of a multi-line script is shown.
func commandTitle(cmd string) string {
	title := strings.TrimSpace(cmd)
	if i := strings.IndexByte(title, '\n'); i >= 0 {
		title = strings.TrimSpace(title[:i]) + " …"
	}
	if r := []rune(title); len(r) > maxTitleRunes {
		title = string(r[:maxTitleRunes]) + "…"
	}
	return title
}

// maxTitleRunes bounds a command title (a one-line label, not a document).
const maxTitleRunes = 200

// runInTerminal runs the command in a terminal the client owns and embeds it
// in the tool call, so the user watches it live.
func runInTerminal(ctx context.Context, env *Env, command string, timeout time.Duration, progress func([]acp.ToolCallContent)) Result {
	limit := outputCap(env)
	req := &acp.CreateTerminalRequest{
		SessionID: env.SessionID, Command: "sh", Args: []string{"-c", command},
		Cwd: env.clientCwd(), OutputByteLimit: &limit, Env: GitConfigEnv(env.childEnv()),
	}
	// The editor's terminal inherits the editor's environment: no pager or
	// prompt may wait there either.
	req.Env = append(req.Env, NonInteractive...)
	// The command's timeout bounds the wait for its terminal too: an editor
	// that never answers terminal/create must not hold the turn past the
	// time the command itself may run (the client-call bound is 30 s).
	createCtx, cancelCreate := context.WithTimeoutCause(ctx, timeout, &NoAnswerError{Method: "terminal/create", After: timeout})
	created, err := env.Client.CreateTerminal(createCtx, req)
	// Read before cancelCreate, which would end createCtx too.
	ownTimeout := createCtx.Err() != nil
	cancelCreate()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return Failure("cancelled before the command started")
		case ownTimeout:
			err = context.Cause(createCtx)
		}
		return Failure("the editor could not start a terminal: %v", err)
	}
	term := &acp.TerminalRequest{SessionID: env.SessionID, TerminalID: created.TerminalID}
	shown := []acp.ToolCallContent{{Terminal: &acp.TerminalContent{TerminalID: created.TerminalID}}}
	progress(shown)

	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	exit, waitErr := env.Client.WaitForTerminalExit(waitCtx, term)
	cancel()
	// Cleanup runs even when the turn was cancelled.
	cleanup, done := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer done()
	var ended string
	switch {
	case waitErr == nil:
	case ctx.Err() != nil:
		ended = "cancelled; the command was killed"
	case waitCtx.Err() != nil:
		ended = fmt.Sprintf("timed out after %s; the command was killed", timeout)
	default:
		ended = fmt.Sprintf("waiting for the command failed: %v", waitErr)
	}
	if waitErr != nil {
		_ = env.Client.KillTerminal(cleanup, term)
	}
	out, outErr := env.Client.TerminalOutput(cleanup, term)
	var text string
	truncated := false
	if outErr == nil {
		text, truncated = out.Output, out.Truncated
		if exit == nil {
			exit = out.ExitStatus
		}
	}
	r := commandResult(env, text, truncated, exitStatus(exit), ended)
	r.Content = shown
	// Released only after the final update showing it was sent: the
	// client drops a released terminal and fails updates that name it.
	r.Release = func() {
		ctx, done := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer done()
		_ = env.Client.ReleaseTerminal(ctx, term)
	}
	return r
}

// clientCwd is the session's directory as the client named it (the
// terminal runs in the client's world).
func (e *Env) clientCwd() string {
	if len(e.ClientRoots) > 0 {
		return e.ClientRoots[0]
	}
	return e.Roots[0]
}

func exitStatus(s *acp.TerminalExitStatus) string {
	switch {
	case s == nil:
		return ""
	case s.ExitCode != nil:
		return fmt.Sprintf("exit code %d", *s.ExitCode)
	case s.Signal != nil:
		return "killed by signal " + *s.Signal
	}
	return ""
}

// runLocal runs the command as a child process group, killed as a whole on
// timeout or cancellation; what it prints is shown live through progress.
func runLocal(ctx context.Context, env *Env, command string, timeout time.Duration, progress func([]acp.ToolCallContent)) Result {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = env.Roots[0]
	cmd.Env = env.childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	buf := &capBuffer{limit: outputCap(env)}
	live := &liveTail{}
	out := teeWriter{kept: buf, live: live}
	cmd.Stdout, cmd.Stderr = out, out
	// A grandchild holding the pipes open must not hang the call.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return Failure("start command: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// Updates are sent from this goroutine, the one the call runs on, so
	// none can follow the call's final update.
	tick := time.NewTicker(liveEvery)
	defer tick.Stop()
	var pace livePacer
	pace.next = time.Now().Add(liveEvery)
	var err error
wait:
	for {
		select {
		case err = <-waited:
			break wait
		case <-runCtx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-waited
			break wait
		case now := <-tick.C:
			if !pace.ready(now) {
				continue
			}
			if text, ok := live.take(); ok {
				pace.sentAt(now)
				progress([]acp.ToolCallContent{acp.ToolText(fenced("", text))})
			}
		}
	}
	var ended, status string
	switch {
	case ctx.Err() != nil:
		ended = "cancelled; the command was killed"
	case runCtx.Err() != nil:
		ended = fmt.Sprintf("timed out after %s; the command was killed", timeout)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		status = "exit code 0"
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		status = fmt.Sprintf("exit code %d", exitErr.ExitCode())
	case ended == "":
		status = err.Error()
	}
	text, cut := buf.result()
	r := commandResult(env, text, cut, status, ended)
	shown, _ := Truncate(text, displayLimit, "shortened for display")
	r.Content = []acp.ToolCallContent{acp.ToolText(fencedOutput(shown, status, ended))}
	return r
}

// childEnv is the environment of commands (see EnvPolicy): a command's
// output is stored and sent to the model, so it must not see crow-acp's
// secrets.
func (e *Env) childEnv() []string {
	env := e.ChildEnv
	if env == nil {
		env = EnvPolicy{}.Environ(os.Environ())
	}
	return withNonInteractive(env)
}

// commandResult is the model's view of a finished command.
func commandResult(env *Env, output string, capped bool, status, ended string) Result {
	var head []string
	if ended != "" {
		head = append(head, ended)
	}
	if status != "" {
		head = append(head, status)
	}
	if capped {
		head = append(head, fmt.Sprintf("output capped at %d bytes", outputCap(env)))
	}
	text := strings.Join(head, "; ") + "\n"
	if output == "" {
		text += "(no output)"
	}
	r := Result{Output: text + output, Failed: ended != "" || (status != "" && status != "exit code 0")}
	if out, cut := Truncate(output, env.OutputLimit, "call read_output with this call's id to read the rest"); cut {
		r.Full, r.Output = output, text+out
	}
	return r
}

func fencedOutput(output, status, ended string) string {
	s := "(no output)"
	if output != "" {
		s = fenced("", output)
	}
	if ended != "" {
		s += "\n" + ended
	} else if status != "" {
		s += "\n" + status
	}
	return s
}

func outputCap(env *Env) int {
	if env.CommandOutputCap > 0 {
		return env.CommandOutputCap
	}
	return DefaultCommandOutputCap
}

// ReplayText is how a command's output is shown once its terminal is gone
// (session/load): fenced as file reads are, shortened to its head and tail.
func ReplayText(output string) string {
	shown, _ := Truncate(output, displayLimit, "shortened for display")
	return fenced("", shown)
}
