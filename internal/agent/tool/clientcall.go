package tool

import (
	"context"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/acp"
)

// DefaultClientCallTimeout bounds each call to the client a tool waits on
// (terminal/create, terminal/output, terminal/kill, terminal/release,
// fs/read_text_file, fs/write_text_file). The editor answers these at once;
// one that does not must not hold the turn forever.
const DefaultClientCallTimeout = 30 * time.Second

// NoAnswerError is a client call that got no answer in time.
type NoAnswerError struct {
	Method string
	After  time.Duration
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("the editor did not answer %s within %s (the client may be stuck; the turn goes on without it)", e.Method, e.After)
}

// BoundClient returns c with every call a tool waits on bounded by limit
// (0: DefaultClientCallTimeout); the call fails with a *NoAnswerError
// naming the method. Not bounded: session/update (a notification),
// session/request_permission (the person may think for long; cancelling
// the turn always ends it) and terminal/wait_for_exit (the command's own
// timeout bounds it).
func BoundClient(c acp.Client, limit time.Duration) acp.Client {
	if limit <= 0 {
		limit = DefaultClientCallTimeout
	}
	return boundClient{c: c, limit: limit}
}

type boundClient struct {
	c     acp.Client
	limit time.Duration
}

var _ acp.Client = boundClient{}

// bounded runs call with ctx limited to b.limit: past it the call's
// context ends (the client is told with $/cancel_request) and the error
// names method, unless ctx itself ended first (the turn was cancelled).
func bounded[R any](ctx context.Context, b boundClient, method string, call func(context.Context) (R, error)) (R, error) {
	cctx, cancel := context.WithTimeoutCause(ctx, b.limit, &NoAnswerError{Method: method, After: b.limit})
	defer cancel()
	res, err := call(cctx)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		var zero R
		return zero, context.Cause(cctx)
	}
	return res, err
}

func (b boundClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	return b.c.SessionUpdate(ctx, n)
}

func (b boundClient) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return b.c.RequestPermission(ctx, req)
}

func (b boundClient) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	return bounded(ctx, b, "fs/read_text_file", func(ctx context.Context) (*acp.ReadTextFileResponse, error) {
		return b.c.ReadTextFile(ctx, req)
	})
}

func (b boundClient) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	return bounded(ctx, b, "fs/write_text_file", func(ctx context.Context) (*acp.WriteTextFileResponse, error) {
		return b.c.WriteTextFile(ctx, req)
	})
}

func (b boundClient) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	return bounded(ctx, b, "terminal/create", func(ctx context.Context) (*acp.CreateTerminalResponse, error) {
		return b.c.CreateTerminal(ctx, req)
	})
}

func (b boundClient) TerminalOutput(ctx context.Context, req *acp.TerminalRequest) (*acp.TerminalOutputResponse, error) {
	return bounded(ctx, b, "terminal/output", func(ctx context.Context) (*acp.TerminalOutputResponse, error) {
		return b.c.TerminalOutput(ctx, req)
	})
}

func (b boundClient) WaitForTerminalExit(ctx context.Context, req *acp.TerminalRequest) (*acp.WaitForTerminalExitResponse, error) {
	return b.c.WaitForTerminalExit(ctx, req)
}

func (b boundClient) KillTerminal(ctx context.Context, req *acp.TerminalRequest) error {
	_, err := bounded(ctx, b, "terminal/kill", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.c.KillTerminal(ctx, req)
	})
	return err
}

func (b boundClient) ReleaseTerminal(ctx context.Context, req *acp.TerminalRequest) error {
	_, err := bounded(ctx, b, "terminal/release", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.c.ReleaseTerminal(ctx, req)
	})
	return err
}
