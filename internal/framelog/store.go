package framelog

import (
	"context"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Store wraps s so that every write that records a projection event (a
// change to a session's messages or compactions, an import, a fork) is
// made as this connection (persistence.Origin: the connection, the
// session's running turn) and commits the frames pending in the same
// transaction, before the change (a session's seq order is then causal
// order, for one commit instead of two).
//
// The wrapper embeds the store and overrides only those writes, WithFence
// and DeleteSession; the reads and the writes that record no event (the
// session row, the token-count cache, leases, permission rules, the event
// log itself) reach the store as they are. TestProjectionWritesAreJournaledInOrder
// fails when persistence.Store gains a method until someone decides
// whether it goes through the frame log.
func (j *Log) Store(s persistence.Recorder) persistence.Store {
	return &orderedStore{Store: s, rec: s, j: j}
}

type orderedStore struct {
	persistence.Store // s, fenced when the wrapper is (WithFence)
	rec               persistence.Recorder
	j                 *Log
	fence             *persistence.Fence // fences every write; nil: none
}

// WithFence returns the wrapper with every write it makes fenced by f.
func (o *orderedStore) WithFence(f persistence.Fence) persistence.Store {
	return &orderedStore{Store: o.rec.WithFence(f), rec: o.rec, j: o.j, fence: &f}
}

var _ persistence.Store = (*orderedStore)(nil)

// write runs op on the store made as this connection, with the pending
// frames (the store packs them with its records: persistence.PackEvents).
// They are taken under flushMu, held until op returns, so no later batch
// commits first; if op fails they go back to the front of the queue.
func (o *orderedStore) write(sessionID string, op func(s persistence.Store) error) error {
	o.j.flushMu.Lock()
	defer o.j.flushMu.Unlock()
	origin := o.j.originForWrite(sessionID)
	s := o.rec.WithOrigin(origin)
	if o.fence != nil {
		s = s.WithFence(*o.fence)
	}
	err := op(s)
	if err != nil && len(origin.Pending) > 0 {
		o.j.mu.Lock()
		o.j.pending = append(origin.Pending, o.j.pending...)
		o.j.mu.Unlock()
	}
	return err
}

// Writes that record projection events: pending frames first, in the same
// transaction.

func (o *orderedStore) AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error {
	if len(msgs) == 0 {
		return o.Store.AppendMessages(ctx, sessionID)
	}
	return o.write(sessionID, func(s persistence.Store) error {
		if err := s.AppendMessages(ctx, sessionID, msgs...); err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Status == persistence.StatusStreaming {
				o.j.replies[m.ID] = o.j.lost
			}
		}
		return nil
	})
}

// UpdateMessage records m leaving text to its chunk frames (m.Streamed)
// only when they are all in the log: see framesKept.
func (o *orderedStore) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	return o.write(m.SessionID, func(s persistence.Store) error {
		if !o.j.framesKept(m.ID) {
			m.Streamed = persistence.Streamed{}
		}
		if err := s.UpdateMessage(ctx, m); err != nil {
			return err
		}
		if m.Status != persistence.StatusStreaming {
			delete(o.j.replies, m.ID)
		}
		return nil
	})
}

// framesKept reports whether every frame sent since reply id's row was
// first written on this connection is in the log or pending, i.e.
// committed with the write about to run: no batch was dropped since.
// Its chunk frames are all sent after that write (a reply is saved
// before each chunk is shown), so only then may its records leave text
// to them; after a dropped batch they carry the text. Called under
// flushMu, which every commit of frames holds.
func (j *Log) framesKept(id int64) bool {
	at, ok := j.replies[id]
	return ok && at == j.lost
}

func (o *orderedStore) InterruptStreaming(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := o.write(sessionID, func(s persistence.Store) error {
		var err error
		n, err = s.InterruptStreaming(ctx, sessionID)
		return err
	})
	return n, err
}

func (o *orderedStore) Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	return o.write(c.SessionID, func(s persistence.Store) error { return s.Compact(ctx, c, added) })
}

func (o *orderedStore) ExpandCompaction(ctx context.Context, sessionID string, id int64) error {
	return o.write(sessionID, func(s persistence.Store) error { return s.ExpandCompaction(ctx, sessionID, id) })
}

func (o *orderedStore) CollapseCompaction(ctx context.Context, sessionID string, id int64) error {
	return o.write(sessionID, func(s persistence.Store) error { return s.CollapseCompaction(ctx, sessionID, id) })
}

func (o *orderedStore) DeleteCompaction(ctx context.Context, sessionID string, id int64) error {
	return o.write(sessionID, func(s persistence.Store) error { return s.DeleteCompaction(ctx, sessionID, id) })
}

func (o *orderedStore) ImportSession(ctx context.Context, d *persistence.SessionDump) error {
	if d == nil {
		return o.Store.ImportSession(ctx, d)
	}
	return o.write(d.Session.ID, func(s persistence.Store) error { return s.ImportSession(ctx, d) })
}

// ForkSession writes the fork as ImportSession does, as this connection.
func (o *orderedStore) ForkSession(ctx context.Context, sourceID string, fork *persistence.Session) (persistence.ForkStats, error) {
	if fork == nil {
		return o.Store.ForkSession(ctx, sourceID, fork)
	}
	var st persistence.ForkStats
	err := o.write(fork.ID, func(s persistence.Store) error {
		var err error
		st, err = s.ForkSession(ctx, sourceID, fork)
		return err
	})
	return st, err
}

// DeleteSession commits the pending frames first, so that the session's
// events all go with it.
func (o *orderedStore) DeleteSession(ctx context.Context, id string) error {
	o.j.Flush(ctx)
	return o.Store.DeleteSession(ctx, id)
}
