package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming"
)

// afterModelRequest runs after every model request, finished or not, with
// what the provider reported.
func (a *Agent) afterModelRequest(ctx context.Context, s *persistence.Session, req streaming.Request, res *streaming.Result) {
}
