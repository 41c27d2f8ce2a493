package tool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
)

// stuckClient answers nothing until the call's context ends.
type stuckClient struct{ acp.UnimplementedClient }

func (stuckClient) ReadTextFile(ctx context.Context, _ *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (stuckClient) WriteTextFile(ctx context.Context, _ *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (stuckClient) TerminalOutput(ctx context.Context, _ *acp.TerminalRequest) (*acp.TerminalOutputResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestBoundClientNamesTheMethod: a call the client never answers fails
// after the bound with an error naming the method; a turn cancelled first
// stays a cancellation.
func TestBoundClientNamesTheMethod(t *testing.T) {
	c := BoundClient(stuckClient{}, 50*time.Millisecond)
	ctx := context.Background()
	calls := map[string]func(context.Context) error{
		"fs/read_text_file": func(ctx context.Context) error {
			_, err := c.ReadTextFile(ctx, &acp.ReadTextFileRequest{})
			return err
		},
		"fs/write_text_file": func(ctx context.Context) error {
			_, err := c.WriteTextFile(ctx, &acp.WriteTextFileRequest{})
			return err
		},
		"terminal/output": func(ctx context.Context) error {
			_, err := c.TerminalOutput(ctx, &acp.TerminalRequest{})
			return err
		},
	}
	for method, call := range calls {
		err := call(ctx)
		var na *NoAnswerError
		if !errors.As(err, &na) || na.Method != method || !strings.Contains(err.Error(), method+" within 50ms") {
			t.Errorf("%s never answered: %v; want a NoAnswerError naming it", method, err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := call(cancelled); !errors.Is(err, context.Canceled) || errors.As(err, &na) {
			t.Errorf("%s in a cancelled turn: %v; want the cancellation", method, err)
		}
	}
}
