package agent

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Titles the user sets, archiving and session status (ACP unstable:
// session/set_title, session/archive, session/unarchive, session/status).
// Both marks live in the session's metadata: they change nothing the store
// needs to query (a listing already reads every session it shows to leave
// out the empty ones), so no schema change is needed for them.

var (
	_ acp.SessionTitler   = (*Agent)(nil)
	_ acp.SessionArchiver = (*Agent)(nil)
	_ acp.SessionStatuser = (*Agent)(nil)
)

// MaxUserTitleRunes bounds a title the user sets; longer ones are cut.
const MaxUserTitleRunes = 200

// NormalizeTitle is a user's title as stored: control characters dropped,
// whitespace collapsed to single spaces, at most MaxUserTitleRunes runes.
// "" means the title is unusable (empty after that).
func NormalizeTitle(title string) string {
	title = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(title, ""))
	title = strings.Join(strings.Fields(title), " ")
	if r := []rune(title); len(r) > MaxUserTitleRunes {
		title = strings.TrimRightFunc(string(r[:MaxUserTitleRunes]), unicode.IsSpace)
	}
	return title
}

// SetSessionTitle stores the user's title; from then on no generated title
// replaces it. The session need not be open here.
func (a *Agent) SetSessionTitle(ctx context.Context, req *acp.SetSessionTitleRequest) (*acp.SetSessionTitleResponse, error) {
	title := NormalizeTitle(req.Title)
	if title == "" {
		return nil, acp.InvalidParams("The title is empty once control characters and spaces are removed: pass the session's new name.")
	}
	sess := a.session(req.SessionID)
	s, err := a.updateMeta(ctx, sess, func(s *persistence.Session, m *sessionMeta) {
		s.Title = title
		m.TitleByUser = true
	})
	if err != nil {
		return nil, a.metaError("set the session title", req.SessionID, err)
	}
	a.log.Info("session retitled", zap.String("session", s.ID))
	if sess.isOpened() { // updates go only to a connection that has the session open
		updated := isoTime(s.UpdatedAt)
		acp.AfterResponse(ctx, func() {
			a.sendUpdate(ctx, sess, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionInfoUpdate{Title: &s.Title, UpdatedAt: &updated}})
		})
	}
	return &acp.SetSessionTitleResponse{Title: s.Title}, nil
}

// ArchiveSession hides the session from session/list. As the protocol
// asks, an open session is first closed: its turn cancelled and awaited,
// what this process holds for it freed. Archiving twice succeeds.
func (a *Agent) ArchiveSession(ctx context.Context, req *acp.ArchiveSessionRequest) (*acp.ArchiveSessionResponse, error) {
	if _, err := a.store.GetSession(ctx, req.SessionID); err != nil {
		return nil, a.metaError("archive the session", req.SessionID, err)
	}
	if err := a.stopTurn(ctx, req.SessionID); err != nil {
		return nil, err
	}
	if err := a.setArchived(ctx, req.SessionID, true); err != nil {
		return nil, err
	}
	a.dropSession(req.SessionID)
	a.log.Info("session archived", zap.String("session", req.SessionID))
	return &acp.ArchiveSessionResponse{}, nil
}

// UnarchiveSession lists the session again.
func (a *Agent) UnarchiveSession(ctx context.Context, req *acp.UnarchiveSessionRequest) (*acp.UnarchiveSessionResponse, error) {
	if err := a.setArchived(ctx, req.SessionID, false); err != nil {
		return nil, err
	}
	a.log.Info("session unarchived", zap.String("session", req.SessionID))
	return &acp.UnarchiveSessionResponse{}, nil
}

func (a *Agent) setArchived(ctx context.Context, id string, archived bool) error {
	_, err := a.updateMeta(context.WithoutCancel(ctx), a.session(id), func(_ *persistence.Session, m *sessionMeta) {
		m.Archived = archived
	})
	if err != nil {
		return a.metaError("change the session's archive state", id, err)
	}
	return nil
}

// SessionStatus says whether this process holds the session open (a
// connection created, loaded or resumed it and has not closed it) or only
// has it stored. It changes nothing: the state map is read, never filled.
func (a *Agent) SessionStatus(ctx context.Context, req *acp.SessionStatusRequest) (*acp.SessionStatusResponse, error) {
	if a.isOpened(req.SessionID) {
		return &acp.SessionStatusResponse{Status: acp.SessionOpen}, nil
	}
	if _, err := a.store.GetSession(ctx, req.SessionID); err != nil {
		return nil, a.metaError("read the session's status", req.SessionID, err)
	}
	return &acp.SessionStatusResponse{Status: acp.SessionSaved}, nil
}

// metaError maps a store error about session id: unknown ids are -32002
// with the id in data, as the protocol asks.
func (a *Agent) metaError(op, id string, err error) error {
	if errors.Is(err, persistence.ErrNotFound) {
		return &acp.Error{Code: acp.CodeResourceNotFound, Message: unknownSession(id).Error(), Data: map[string]string{"sessionId": id}}
	}
	return storeError(op, err)
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

// SessionMarker is what changing a stored session's marks needs.
type SessionMarker interface {
	GetSession(ctx context.Context, id string) (*persistence.Session, error)
	UpdateSession(ctx context.Context, s *persistence.Session) error
}

// RetitleStored sets the user's title of a stored session, for the
// `sessions rename` command, as session/set_title does; it returns the
// title as stored. A running crow-acp sees it at its next read of the
// session.
func RetitleStored(ctx context.Context, store SessionMarker, id, title string) (string, error) {
	title = NormalizeTitle(title)
	if title == "" {
		return "", errors.New("the title is empty once control characters and spaces are removed")
	}
	err := changeStored(ctx, store, id, func(s *persistence.Session, m *sessionMeta) {
		s.Title, m.TitleByUser = title, true
	})
	return title, err
}

// ArchiveStored archives or unarchives a stored session, for the
// `sessions archive` and `unarchive` commands.
func ArchiveStored(ctx context.Context, store SessionMarker, id string, archived bool) error {
	return changeStored(ctx, store, id, func(_ *persistence.Session, m *sessionMeta) { m.Archived = archived })
}

func changeStored(ctx context.Context, store SessionMarker, id string, fn func(*persistence.Session, *sessionMeta)) error {
	s, err := store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	m := decodeMeta(s.Metadata)
	fn(s, &m)
	s.Metadata = encodeMeta(m)
	return store.UpdateSession(ctx, s)
}

// SessionCost is a stored session's cumulative model cost by currency
// (none when its models had no prices).
func SessionCost(s *persistence.Session) map[string]float64 { return decodeMeta(s.Metadata).Cost }
