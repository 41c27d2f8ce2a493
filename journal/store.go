package journal

import (
	"context"

	"github.com/crow-acp/crow-acp/persistence"
)

// Store wraps s so that every write to a session's messages first commits
// the frames pending (a session's seq order is then causal order) and
// carries the session's connection and running turn to the projection
// events the store records. Other methods pass through.
func (j *Journal) Store(s persistence.Store) persistence.Store {
	return &orderedStore{Store: s, j: j}
}

type orderedStore struct {
	persistence.Store
	j *Journal
}

func (o *orderedStore) before(ctx context.Context, sessionID string) context.Context {
	o.j.Flush(ctx)
	if persistence.EventSourceFrom(ctx) == (persistence.EventSource{}) {
		ctx = persistence.WithEventSource(ctx, o.j.Source(sessionID))
	}
	return ctx
}

func (o *orderedStore) AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error {
	return o.Store.AppendMessages(o.before(ctx, sessionID), sessionID, msgs...)
}

func (o *orderedStore) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	return o.Store.UpdateMessage(o.before(ctx, m.SessionID), m)
}

func (o *orderedStore) ApplyCompaction(ctx context.Context, c *persistence.Compaction, summary *persistence.Message) error {
	return o.Store.ApplyCompaction(o.before(ctx, c.SessionID), c, summary)
}

func (o *orderedStore) InterruptStreaming(ctx context.Context, sessionID string) (int, error) {
	return o.Store.InterruptStreaming(o.before(ctx, sessionID), sessionID)
}
