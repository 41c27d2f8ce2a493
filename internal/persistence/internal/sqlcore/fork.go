package sqlcore

import (
	"context"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// ForkSession copies a session (persistence.Forker): it dumps the source
// and imports the copy, as `crow-acp migrate` does, rather than copying
// rows with INSERT ... SELECT, since a compaction's id lists must be
// renumbered.
func (s *Store) ForkSession(ctx context.Context, sourceID string, fork *persistence.Session) (persistence.ForkStats, error) {
	st, err := s.forkSession(ctx, sourceID, fork)
	if err != nil {
		return persistence.ForkStats{}, s.errorf("fork session", err)
	}
	return st, nil
}

func (s *Store) forkSession(ctx context.Context, sourceID string, fork *persistence.Session) (persistence.ForkStats, error) {
	if fork == nil || fork.ID == "" {
		return persistence.ForkStats{}, fmt.Errorf("the fork needs an id")
	}
	if fork.ID == sourceID {
		return persistence.ForkStats{}, fmt.Errorf("session %q: %w", fork.ID, persistence.ErrConflict)
	}
	d, err := persistence.Dump(ctx, s, sourceID)
	if err != nil {
		return persistence.ForkStats{}, err
	}
	// The fork's undo starts at the fork: the source's checkpoints and
	// undos stay with the source.
	d.Checkpoints, d.Undos, d.Blobs = nil, nil, nil
	now := s.now()
	d.Session = *fork
	d.Session.CreatedAt, d.Session.UpdatedAt = now, now
	for i := range d.Messages {
		d.Messages[i].SessionID = fork.ID
	}
	for i := range d.Compactions {
		d.Compactions[i].SessionID = fork.ID
	}
	if err := s.importSession(ctx, d); err != nil {
		return persistence.ForkStats{}, err
	}
	*fork = d.Session
	return persistence.ForkStats{Messages: len(d.Messages), Compactions: len(d.Compactions), LastSeq: d.LastSeq()}, nil
}
