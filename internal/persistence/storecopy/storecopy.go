// Package storecopy copies every session from one store to another, for
// example from a developer's SQLite file to the team's PostgreSQL, and proves
// the copy: each session is read back from the destination and its content
// digest (persistence.Digest) compared with the source's, and its event log
// (the frames and lifecycle events; see isHistory) compared event by event.
//
// Copying is idempotent: a session the destination already holds with the
// same content is skipped, so an interrupted run can simply be run again. A
// session the destination holds with different content is reported as a
// conflict and left alone: nothing is ever overwritten.
package storecopy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Report is what a Copy did and verified.
type Report struct {
	Sessions    int // sessions in the source
	Copied      int // copied and verified
	Identical   int // already in the destination with the same content
	Messages    int // messages of the copied and identical sessions, verified in the destination
	Compactions int // compaction records, likewise
	Events      int // event log entries (frames, lifecycle), likewise
	// Conflicts are sessions the destination already holds with different
	// content; they were not copied.
	Conflicts []string
	// Deleted are sessions deleted from the source while copying.
	Deleted []string
	// Rules counts the source's permission rules, copied or already
	// there; RuleConflicts are those the destination has with the other
	// decision ("cwd: key"), not copied.
	Rules         int
	RuleConflicts []string
}

// Progress is called after each session with what happened to it:
// "copied", "identical", "conflict" or "deleted" (from the source, meanwhile).
type Progress func(id, outcome string)

// Copy copies every session of src into dst and verifies each one. It stops
// at the first error (a store failing, a copy that does not read back
// identical) and returns the report so far; conflicts do not stop it but
// make it return ErrConflicts at the end.
func Copy(ctx context.Context, dst Destination, src Source, progress Progress) (*Report, error) {
	ids, err := allSessions(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("list source sessions: %w", err)
	}
	r := &Report{Sessions: len(ids)}
	for _, id := range ids {
		outcome, d, events, err := copySession(ctx, dst, src, id)
		if err != nil {
			return r, fmt.Errorf("session %q: %w", id, err)
		}
		switch outcome {
		case "copied":
			r.Copied++
		case "identical":
			r.Identical++
		case "conflict":
			r.Conflicts = append(r.Conflicts, id)
		case "deleted":
			r.Deleted = append(r.Deleted, id)
		}
		if d != nil {
			r.Messages += len(d.Messages)
			r.Compactions += len(d.Compactions)
			r.Events += events
		}
		if progress != nil {
			progress(id, outcome)
		}
	}
	// Count what the destination now lists: every source session must be
	// there, whatever happened to it.
	have, err := allSessions(ctx, dst)
	if err != nil {
		return r, fmt.Errorf("list destination sessions: %w", err)
	}
	inDst := make(map[string]bool, len(have))
	for _, id := range have {
		inDst[id] = true
	}
	for _, id := range ids {
		if !inDst[id] && !slices.Contains(r.Deleted, id) {
			return r, fmt.Errorf("verification failed: session %q is not listed by the destination", id)
		}
	}
	if r.Rules, r.RuleConflicts, err = copyRules(ctx, dst, src); err != nil {
		return r, err
	}
	if n := len(r.Conflicts) + len(r.RuleConflicts); n > 0 {
		return r, fmt.Errorf("%d sessions and %d permission rules: %w", len(r.Conflicts), len(r.RuleConflicts), ErrConflicts)
	}
	return r, nil
}

// ErrConflicts means some sessions exist in the destination with other
// content; Report.Conflicts names them.
var ErrConflicts = errors.New("already in the destination with different content (not copied)")

// allSessions lists every session id of s, and the project directories of
// the sessions. Paging is keyset-based, so a session written meanwhile is
// neither skipped nor listed twice (a session bumped to the top after its
// page was read is still listed once).
func allSessions(ctx context.Context, s Source) (ids []string, err error) {
	seen := make(map[string]bool)
	opts := persistence.ListSessionsOptions{Limit: persistence.MaxListLimit}
	for {
		list, next, err := s.ListSessions(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, sess := range list {
			if !seen[sess.ID] {
				seen[sess.ID] = true
				ids = append(ids, sess.ID)
			}
		}
		if next == "" {
			break
		}
		opts.Cursor = next
	}
	slices.Sort(ids) // a stable order: progress output can be compared between runs
	return ids, nil
}

// copySession copies one session and verifies it. It returns the outcome
// and the dump that now stands for the session in both stores.
func copySession(ctx context.Context, dst Destination, src Source, id string) (string, *persistence.SessionDump, int, error) {
	d, err := persistence.Dump(ctx, src, id)
	if errors.Is(err, persistence.ErrNotFound) {
		// Deleted since it was listed: nothing to copy.
		return "deleted", nil, 0, nil
	}
	if err == nil {
		err = d.ReadBlobs(ctx, src) // the checkpoints' bytes travel with them
	}
	if err != nil {
		return "", nil, 0, fmt.Errorf("read source: %w", err)
	}
	want, err := persistence.Digest(d)
	if err != nil {
		return "", nil, 0, fmt.Errorf("source: %w", err)
	}
	outcome := "copied"
	if err := dst.ImportSession(ctx, d); errors.Is(err, persistence.ErrConflict) {
		outcome = "identical"
	} else if err != nil {
		return "", nil, 0, fmt.Errorf("write destination: %w", err)
	}
	got, err := persistence.Dump(ctx, dst, id)
	if err == nil {
		err = got.ReadBlobs(ctx, dst)
	}
	if err != nil {
		return "", nil, 0, fmt.Errorf("read back: %w", err)
	}
	digest, err := persistence.Digest(got)
	if err != nil {
		return "", nil, 0, fmt.Errorf("read back: %w", err)
	}
	switch {
	case digest != want && outcome == "identical":
		return "conflict", nil, 0, nil
	case digest != want:
		return "", nil, 0, fmt.Errorf("verification failed: the destination reads back with digest %s, the source has %s", digest, want)
	}
	events, err := copyEvents(ctx, dst, src, id)
	if err != nil {
		return "", nil, 0, fmt.Errorf("event log: %w", err)
	}
	return outcome, got, events, nil
}
