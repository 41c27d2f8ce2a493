package persistence

import "context"

// CompactionStore applies, inspects and undoes compactions, and caches
// token counts. It is part of Store.
//
// A compaction never deletes: the messages it compacts stay in the store,
// inactive, and Expand brings them back.
type CompactionStore interface {
	// Compact applies a compaction policy's result, with any number of
	// added messages (a summary, or the markers replacing pruned tool
	// output): in one transaction it appends added (active, next seqs, in
	// order; filled in like AppendMessages), marks c.CompactedIDs inactive with
	// compacted_into_id = c, and stores c with c.AddedIDs = the ids of
	// added. c.SummaryMessageID is set to the first added message with
	// RoleSummary, nil without one. It bumps the session's UpdatedAt.
	// ErrNotFound if the session does not exist or a compacted id is not a
	// message of that session. A message compacted again points at the
	// latest compaction.
	Compact(ctx context.Context, c *Compaction, added []*Message) error
	// Compaction returns one record. ErrNotFound for an unknown session or
	// id, or a record of another session.
	Compaction(ctx context.Context, sessionID string, id int64) (*Compaction, error)
	// ExpandCompaction re-activates the compacted messages and hides the
	// added ones (inactive, compacted_into_id unchanged), and marks the
	// record Expanded. ErrConflict if it is already expanded or one of its
	// added messages has since been compacted by a later compaction (expand
	// that one first). ErrNotFound as Compaction.
	ExpandCompaction(ctx context.Context, sessionID string, id int64) error
	// CollapseCompaction undoes ExpandCompaction: the active set is exactly
	// what it was before the expand. ErrConflict if the record is not
	// expanded or one of its compacted messages has since been compacted
	// again. ErrNotFound as Compaction.
	CollapseCompaction(ctx context.Context, sessionID string, id int64) error
	// DeleteCompaction undoes a compaction for good: its compacted messages
	// are active again, the messages it added are deleted and so is the
	// record. ErrConflict as ExpandCompaction. ErrNotFound as Compaction.
	DeleteCompaction(ctx context.Context, sessionID string, id int64) error
	// SetTokenCounts caches token counts (message id -> count) counted with
	// encoding. Ids that are not messages of the session are ignored; it
	// does not bump UpdatedAt. ErrNotFound for an unknown session.
	SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error
}
