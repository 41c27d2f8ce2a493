package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming"
)

// prepareContext returns the messages for the next model request, rebuilt
// from the store. It runs before every model request, including between
// tool iterations of one turn, which is where compaction hooks in.
func (a *Agent) prepareContext(ctx context.Context, s *persistence.Session) ([]streaming.Message, error) {
	msgs, err := a.buildContext(ctx, s)
	if err != nil {
		return nil, storeError("build context", err)
	}
	return msgs, nil
}
