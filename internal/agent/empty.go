package agent

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Zed calls session/new as soon as a thread view opens, prompted or not,
// so a store fills with sessions nobody ever wrote in. Those are left out
// of session/list (and `crow-acp sessions list` unless --all) and deleted
// once they are older than the empty-session TTL, unless this connection
// opened them or another process holds their lease (a client may still be
// about to prompt an open one; a thread view left open and unprompted for
// longer than the TTL in another process is not seen and goes). Zed's
// own agents store a thread only once it has a message.

// DefaultEmptySessionTTL is how long a never-prompted session is kept.
const DefaultEmptySessionTTL = 24 * time.Hour

// IsEmptySession reports whether s has no message. The first prompt titles
// a session, so a titled one is not empty without reading its history; an
// untitled one (a prompt of only an image, a title that could not be
// stored, an import) is read for one message, not its whole history: a
// listing reads every untitled session it shows.
func IsEmptySession(ctx context.Context, store SessionStore, s *persistence.Session) (bool, error) {
	if s.Title != "" {
		return false, nil
	}
	msgs, err := store.Messages(ctx, s.ID, persistence.MessageFilter{Limit: 1})
	if err != nil {
		return false, err
	}
	return len(msgs) == 0, nil
}

// maxListPages bounds the store pages one listing reads past empty
// sessions; a page cut short still carries the cursor to go on.
const maxListPages = 20

// ListNonEmpty is store.ListSessions without the empty sessions, which it
// returns apart. The page holds up to opts.Limit sessions; next continues
// right after the last session read, shown or not.
func ListNonEmpty(ctx context.Context, store SessionStore, opts persistence.ListSessionsOptions) (list []persistence.Session, next string, empty []persistence.Session, err error) {
	return ListShown(ctx, store, opts, nil)
}

// ListShown is ListNonEmpty that also leaves out the non-empty sessions
// keep rejects (nil keeps all): the archive filter (archive.go).
func ListShown(ctx context.Context, store SessionStore, opts persistence.ListSessionsOptions, keep func(*persistence.Session) bool) (list []persistence.Session, next string, empty []persistence.Session, err error) {
	want := opts.Limit
	if want <= 0 {
		want = persistence.DefaultListLimit
	}
	want = min(want, persistence.MaxListLimit)
	next = opts.Cursor
	for range maxListPages {
		page, cursor, err := store.ListSessions(ctx, persistence.ListSessionsOptions{Cwd: opts.Cwd, Limit: want - len(list), Cursor: next})
		if err != nil {
			return nil, "", nil, err
		}
		for _, s := range page {
			isEmpty, err := IsEmptySession(ctx, store, &s)
			switch {
			case errors.Is(err, persistence.ErrNotFound):
				// deleted since it was listed
			case err != nil:
				return nil, "", nil, err
			case isEmpty:
				empty = append(empty, s)
			case keep != nil && !keep(&s):
				// not asked for (an archived session)
			default:
				list = append(list, s)
			}
		}
		next = cursor
		if next == "" || len(list) >= want {
			break
		}
	}
	return list, next, empty, nil
}

// sweepEmpty deletes the empty sessions older than the TTL that no live
// process holds. Failures only cost a later retry.
func (l *lifecycle) sweepEmpty(ctx context.Context, empty []persistence.Session) {
	ttl := l.cfg.EmptySessionTTL
	if ttl == 0 {
		ttl = DefaultEmptySessionTTL
	}
	if ttl < 0 {
		return
	}
	for _, s := range empty {
		if time.Since(s.UpdatedAt) < ttl || l.sessions.isOpened(s.ID) {
			continue
		}
		lease, err := l.store.GetLease(ctx, s.ID)
		if err == nil && time.Now().Before(lease.ExpiresAt) {
			continue // busy in another process
		}
		if err != nil && !errors.Is(err, persistence.ErrNotFound) {
			continue
		}
		if err := l.deleteStored(ctx, s.ID); err != nil {
			l.log.Warn("delete empty session", zap.String("session", s.ID), zap.Error(err))
			continue
		}
		l.log.Info("empty session deleted", zap.String("session", s.ID), zap.Time("updated", s.UpdatedAt))
	}
}
