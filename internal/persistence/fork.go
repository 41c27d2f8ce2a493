package persistence

import "context"

// Forker copies a session into a new one (ACP session/fork).
type Forker interface {
	// ForkSession stores fork, a new session whose history is sourceID's
	// as it stands: every message, active or not, with its seq, status,
	// parts, token count and CreatedAt, and every compaction record (the
	// summaries, the pruned output and the originals they replaced), with
	// new ids and the references between them rewritten, so that the two
	// share no row and each goes on alone. fork's ID, Cwd, Title and
	// Metadata are the caller's; its CreatedAt and UpdatedAt are set to
	// now. The copy is written in one transaction, as ImportSession writes
	// (its event log starts with the session_imported snapshot). A context
	// carrying the source's Fence copies only while that lease is live:
	// the source does not change under the copy.
	//
	// ErrNotFound if sourceID does not exist; ErrConflict if fork.ID does.
	ForkSession(ctx context.Context, sourceID string, fork *Session) (ForkStats, error)
}

// ForkStats is what ForkSession copied.
type ForkStats struct {
	Messages    int
	Compactions int
	// LastSeq is the seq of the last message copied (0: none): the fork
	// holds the source's history up to and including it.
	LastSeq int64
}
