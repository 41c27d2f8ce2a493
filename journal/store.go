package journal

import (
	"context"

	"github.com/crow-acp/crow-acp/persistence"
)

// Store wraps s so that every write to a session's messages commits the
// frames pending in the same transaction, before the change (a session's
// seq order is then causal order, for one commit instead of two), and
// carries the session's connection and running turn to the projection
// events the store records. Other methods pass through.
func (j *Journal) Store(s persistence.Store) persistence.Store {
	return &orderedStore{Store: s, j: j}
}

type orderedStore struct {
	persistence.Store
	j *Journal
}

// write runs op with the pending frames in its context. They are taken
// under flushMu, held until op returns, so no later batch commits first; if
// op fails they go back to the front of the queue.
func (o *orderedStore) write(ctx context.Context, sessionID string, op func(ctx context.Context) error) error {
	o.j.flushMu.Lock()
	defer o.j.flushMu.Unlock()
	o.j.mu.Lock()
	pending := o.j.pending
	o.j.pending = nil
	o.j.mu.Unlock()
	src := persistence.EventSourceFrom(ctx)
	if src.ConnectionID == "" {
		src = o.j.Source(sessionID)
	}
	src.Pending = pending
	err := op(persistence.WithEventSource(ctx, src))
	if err != nil && len(pending) > 0 {
		o.j.mu.Lock()
		o.j.pending = append(pending, o.j.pending...)
		o.j.mu.Unlock()
	}
	return err
}

func (o *orderedStore) AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error {
	if len(msgs) == 0 {
		return o.Store.AppendMessages(ctx, sessionID)
	}
	return o.write(ctx, sessionID, func(ctx context.Context) error {
		return o.Store.AppendMessages(ctx, sessionID, msgs...)
	})
}

func (o *orderedStore) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	return o.write(ctx, m.SessionID, func(ctx context.Context) error { return o.Store.UpdateMessage(ctx, m) })
}

func (o *orderedStore) ApplyCompaction(ctx context.Context, c *persistence.Compaction, summary *persistence.Message) error {
	return o.write(ctx, c.SessionID, func(ctx context.Context) error { return o.Store.ApplyCompaction(ctx, c, summary) })
}

func (o *orderedStore) Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	return o.write(ctx, c.SessionID, func(ctx context.Context) error { return o.Store.Compact(ctx, c, added) })
}

func (o *orderedStore) InterruptStreaming(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := o.write(ctx, sessionID, func(ctx context.Context) error {
		var err error
		n, err = o.Store.InterruptStreaming(ctx, sessionID)
		return err
	})
	return n, err
}

// DeleteSession commits the pending frames first, so that the session's
// events all go with it.
func (o *orderedStore) DeleteSession(ctx context.Context, id string) error {
	o.j.Flush(ctx)
	return o.Store.DeleteSession(ctx, id)
}
