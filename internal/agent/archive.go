package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Archiving (ACP unstable: session/archive, session/unarchive). The mark
// lives in the session's metadata, as a title the user sets does
// (title.go): it changes nothing the store needs to query (a listing
// already reads every session it shows to leave out the empty ones), so no
// schema change is needed for it.

var _ acp.SessionArchiver = (*Agent)(nil)

func (l *lifecycle) setArchived(ctx context.Context, id string, archived bool) error {
	_, err := l.updateMeta(context.WithoutCancel(ctx), l.sessions.get(id), func(_ *persistence.Session, m *sessionMeta) {
		m.Archived = archived
	})
	if err != nil {
		return l.metaError("change the session's archive state", id, err)
	}
	return nil
}

// IsArchived reports whether the session is archived.
func IsArchived(s *persistence.Session) bool { return decodeMeta(s.Metadata).Archived }

// ArchiveFilter is the listing filter for an archived value of
// session/list (validated by acp): "" and "exclude" hide archived
// sessions, "include" shows all, "only" only them.
func ArchiveFilter(archived string) func(*persistence.Session) bool {
	switch archived {
	case acp.ArchivedInclude:
		return nil
	case acp.ArchivedOnly:
		return IsArchived
	default:
		return func(s *persistence.Session) bool { return !IsArchived(s) }
	}
}

// ArchiveStored archives or unarchives a stored session, for the
// `sessions archive` and `unarchive` commands.
func ArchiveStored(ctx context.Context, store SessionMarker, id string, archived bool) error {
	return changeStored(ctx, store, id, func(_ *persistence.Session, m *sessionMeta) { m.Archived = archived })
}
