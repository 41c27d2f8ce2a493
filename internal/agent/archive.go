package agent

import (
	"context"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Archiving (ACP unstable: session/archive, session/unarchive). The mark
// lives in the session's metadata, as a title the user sets does
// (title.go): it changes nothing the store needs to query (a listing
// already reads every session it shows to leave out the empty ones), so no
// schema change is needed for it.

var _ acp.SessionArchiver = (*Agent)(nil)

// ArchiveSession hides the session from session/list. As the protocol
// asks, an open session is first closed: its turn cancelled and awaited,
// what this process holds for it freed. Archiving twice succeeds.
func (a *Agent) ArchiveSession(ctx context.Context, req *acp.ArchiveSessionRequest) (*acp.ArchiveSessionResponse, error) {
	if _, err := a.store.GetSession(ctx, req.SessionID); err != nil {
		return nil, a.metaError("archive the session", req.SessionID, err)
	}
	if err := a.sessions.stopTurn(ctx, req.SessionID); err != nil {
		return nil, err
	}
	if err := a.lifecycle.setArchived(ctx, req.SessionID, true); err != nil {
		return nil, err
	}
	a.sessions.drop(req.SessionID)
	a.log.Info("session archived", zap.String("session", req.SessionID))
	return &acp.ArchiveSessionResponse{}, nil
}

// UnarchiveSession lists the session again.
func (a *Agent) UnarchiveSession(ctx context.Context, req *acp.UnarchiveSessionRequest) (*acp.UnarchiveSessionResponse, error) {
	if err := a.lifecycle.setArchived(ctx, req.SessionID, false); err != nil {
		return nil, err
	}
	a.log.Info("session unarchived", zap.String("session", req.SessionID))
	return &acp.UnarchiveSessionResponse{}, nil
}

func (a *lifecycle) setArchived(ctx context.Context, id string, archived bool) error {
	_, err := a.updateMeta(context.WithoutCancel(ctx), a.sessions.get(id), func(_ *persistence.Session, m *sessionMeta) {
		m.Archived = archived
	})
	if err != nil {
		return a.metaError("change the session's archive state", id, err)
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
