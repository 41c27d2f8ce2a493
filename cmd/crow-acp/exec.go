package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/terminal"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
)

const execUsage = `Usage: crow-acp exec [flags] PROMPT
       crow-acp exec [flags] -          (read the prompt from stdin)

Runs one prompt turn in the terminal with the same agent editors use, and
stores it as a session like any other. The answer streams to stdout; tool
calls, permission questions, progress and the session id go to stderr, so
"crow-acp exec 'summarise README.md' > summary.md" keeps only the answer.
A running command's output is shown on stderr as the agent streams it.

When a tool needs permission, exec asks on the terminal; --yes allows every
request (once each); without a terminal and without --yes it is refused.
--session ID continues a stored session (its directory is reused unless
--cwd says otherwise). Ctrl-C cancels the turn; what was said is kept.

Exit status: 0 the turn ended normally; 1 it failed (model endpoint,
database); 2 usage or configuration; 3 no such session; 4 the turn stopped
early (max tokens, max model calls, refusal); 130 interrupted.
`

// execOptions are exec's own flags.
type execOptions struct {
	yes      bool
	session  string
	cwd      string
	thoughts bool
}

func runExec(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet("exec", execUsage)
	var opt execOptions
	fs.BoolVar(&opt.yes, "yes", false, "grant every permission request (once each) without asking")
	fs.BoolVar(&opt.yes, "y", false, "short for --yes")
	fs.StringVar(&opt.session, "session", "", "continue the stored session ID")
	fs.StringVar(&opt.cwd, "cwd", "", "project directory the agent works in (default: the current directory, or the session's)")
	fs.BoolVar(&opt.thoughts, "thoughts", false, "show the model's reasoning on stderr")
	cf := config.AddFlags(fs, config.FlagsStore|config.FlagsModel|config.FlagsLog)
	pos, cfg, err := configured(fs, cf, args, e)
	if err == nil && len(pos) == 0 {
		err = config.Usagef("exec: missing PROMPT (see crow-acp exec --help)")
	}
	if err != nil {
		return e.fail(err)
	}
	prompt := strings.Join(pos, " ")
	if prompt == "-" {
		b, err := io.ReadAll(io.LimitReader(e.std.in, acp.DefaultMaxLineBytes))
		if err != nil {
			return e.fail(fmt.Errorf("exec: read the prompt from stdin: %w", err))
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return e.fail(config.Usagef("exec: the prompt is empty"))
	}
	return execTurn(ctx, e, cfg, opt, prompt)
}

// execTurn runs the agent in-process over an in-memory ACP connection and
// drives it as a terminal client: the turn is exactly the one an editor
// gets, with nothing re-implemented here.
func execTurn(ctx context.Context, e *env, cfg *config.Settings, opt execOptions, prompt string) int {
	log, store, cwd, closeAll, err := openTerminal(ctx, cfg, opt)
	if err != nil {
		return e.fail(err)
	}
	defer closeAll()

	ui := terminal.New(e.std.in, e.std.out, e.std.err, terminal.Options{Yes: opt.yes, Thoughts: opt.thoughts})
	defer ui.Close()

	client, stopAgent, err := startAgent(ctx, cfg, store, ui, log, "exec")
	if err != nil {
		return e.fail(fmt.Errorf("exec: %w", err))
	}
	defer stopAgent()

	sessionID := opt.session
	if sessionID == "" {
		res, err := client.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		if err != nil {
			return e.fail(fmt.Errorf("exec: new session: %w", err))
		}
		sessionID = res.SessionID
	} else {
		// The replay of the stored conversation is not shown again.
		ui.SetReplaying(true)
		_, err := client.LoadSession(context.Background(), &acp.LoadSessionRequest{SessionID: sessionID, Cwd: cwd, McpServers: []acp.McpServer{}})
		ui.SetReplaying(false)
		var acpErr *acp.Error
		if errors.As(err, &acpErr) && acpErr.Code == acp.CodeResourceNotFound {
			return e.fail(&sessions.NotFoundError{ID: sessionID})
		}
		if err != nil {
			return e.fail(fmt.Errorf("exec: load session %s: %w", sessionID, err))
		}
	}
	ui.Status("session %s (%s)", sessionID, cwd)

	type outcome struct {
		res *acp.PromptResponse
		err error
	}
	done := make(chan outcome, 1)
	ui.Waiting("waiting for the model")
	go func() {
		var o outcome
		o.res, o.err = client.Prompt(context.Background(), &acp.PromptRequest{SessionID: sessionID, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}})
		done <- o
	}()

	var o outcome
	interrupted := false
	select {
	case o = <-done:
	case <-ctx.Done():
		interrupted = true
		ui.StopProgress()
		ui.Status("cancelling…")
		_ = client.Cancel(context.Background(), &acp.CancelNotification{SessionID: sessionID})
		select {
		case o = <-done:
		case <-time.After(10 * time.Second):
			ui.Status("the agent did not answer the cancellation within 10s")
			return exitInterrupted
		}
	}
	ui.Finish()
	if o.err != nil {
		code := e.fail(fmt.Errorf("exec: %w", o.err))
		ui.Status("the prompt is stored in session %s: retry with crow-acp exec --session %s \"…\" (crow-acp doctor checks the set-up)", sessionID, sessionID)
		return code
	}
	ui.Status("%s · continue with: crow-acp exec --session %s \"…\"", terminal.StopText(o.res.StopReason), sessionID)
	switch o.res.StopReason {
	case acp.StopEndTurn:
		return exitOK
	case acp.StopCancelled:
		return exitInterrupted
	default:
		if interrupted {
			return exitInterrupted
		}
		return exitIncomplete
	}
}

// execCwd is the directory the session works in: --cwd, else the stored
// session's directory when continuing one, else the current directory.
func execCwd(ctx context.Context, store backend.Store, opt execOptions) (string, error) {
	if opt.cwd != "" {
		abs, err := filepath.Abs(opt.cwd)
		if err != nil {
			return "", config.Usagef("exec: --cwd %s: %v", opt.cwd, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", config.Usagef("exec: --cwd %s is not a directory", opt.cwd)
		}
		return abs, nil
	}
	if opt.session != "" {
		s, err := store.GetSession(ctx, opt.session)
		if errors.Is(err, persistence.ErrNotFound) {
			return "", &sessions.NotFoundError{ID: opt.session}
		}
		if err != nil {
			return "", fmt.Errorf("exec: read session %s: %w", opt.session, err)
		}
		if st, err := os.Stat(s.Cwd); err == nil && st.IsDir() {
			return s.Cwd, nil
		}
		return "", config.Usagef("exec: the session's directory %s no longer exists: pass --cwd", s.Cwd)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("exec: current directory: %w", err)
	}
	return wd, nil
}

// startAgent runs the agent in-process over an in-memory ACP connection
// and connects ui to it as the client: the terminal commands (exec, chat)
// get exactly the turn an editor gets, with nothing re-implemented.
// stop ends the connection and waits (bounded) for the agent to store
// what it has.
// openTerminal is what exec and chat set up before the agent starts: the
// log, the store and the session's directory; done closes the first two.
func openTerminal(ctx context.Context, cfg *config.Settings, opt execOptions) (*zap.Logger, backend.Store, string, func(), error) {
	log, closeLog, err := newLogger(cfg, nil)
	if err != nil {
		return nil, nil, "", nil, config.Usagef("%v", err)
	}
	store, err := cfg.OpenStore(ctx)
	if err != nil {
		closeLog()
		return nil, nil, "", nil, err
	}
	done := func() { store.Close(); closeLog() }
	cwd, err := execCwd(ctx, store, opt)
	if err != nil {
		done()
		return nil, nil, "", nil, err
	}
	return log, store, cwd, done, nil
}

func startAgent(ctx context.Context, cfg *config.Settings, store backend.Store, ui acp.Client, log *zap.Logger, name string) (*acp.ClientConn, func(), error) {
	// The agent's connection lives on background contexts: Ctrl-C cancels
	// the turn through session/cancel, like an editor does, so that the
	// agent answers "cancelled" and stores what it has.
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	conn, ag, closeAgent := connectAgent(ctx, cfg, store, agentIn, agentOut, log)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = conn.Serve(context.Background(), ag)
		closeAgent()
		agentOut.Close()
	}()
	client := acp.NewClientConn(clientIn, clientOut, ui, acp.Options{Logger: log})
	stop := func() {
		client.Close()
		clientOut.Close() // the agent sees EOF, finishes and returns
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			log.Warn("the agent did not stop within 10s")
		}
	}
	// The UI shows compaction and notices apart from the answer.
	compaction, notices := json.RawMessage(`{}`), json.RawMessage(`{}`)
	if _, err := client.Initialize(context.Background(), &acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion,
		ClientCapabilities: acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{Compaction: &compaction, Notices: &notices},
			// Questions (ask_user, MCP forms) are asked at the terminal.
			Elicitation: &acp.ElicitationCapabilities{Form: &acp.Marker{}}},
		ClientInfo: &acp.Implementation{Name: "crow-acp-" + name, Title: "crow-acp " + name, Version: version},
	}); err != nil {
		stop()
		return nil, nil, fmt.Errorf("initialize: %w", err)
	}
	return client, stop, nil
}
